"""dynorm: a Django-style ORM for DynamoDB single-table design, built on PynamoDB.

Declare a :class:`Table` and :class:`Entity` classes with key templates; query through
managers and lazy querysets (``Product.objects.filter(brand_id="3")`` is one Query).
See ``docs/`` for the tutorial and reference.
"""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING, Any

# The dependencies' heavy modules first, while the import nesting is shallow. On Python 3.11 and
# 3.12 a call that lands on a 16 KB boundary of the interpreter's frame stack maps and unmaps a
# chunk each time (python/cpython issue 142183, fixed in 3.13 and 3.14). urllib3's URL patterns,
# compiled by a deep recursion, hit that at most stack depths when botocore first imports urllib3
# seven imports down, as it did under dynorm's modules (boto3's: four): ≈ 2,800 mmap/munmap pairs and
# their page faults, ≈ 20 ms of system time in a cold start; from here, a few (docs/performance.md).
import botocore.compat  # noqa: F401
import pynamodb.models  # noqa: F401

from . import fields, keyguard  # noqa: F401 - keyguard installs the key-version check in the drivers
from .backend import Capture, Stats, aclose, capture
from .conf import Settings, configure, get_settings
from .constraints import UniqueConstraint
from .exceptions import (
    AlreadyExists,
    BatchIncomplete,
    ConditionFailed,
    ConfigurationError,
    DoesNotExist,
    DynormError,
    IntegrityError,
    InvalidCursor,
    InvalidKeyValue,
    InvalidQuery,
    KeyChangeError,
    KeyVersionBehind,
    ModelError,
    MultipleObjectsReturned,
    ReadBackFailed,
    ScanRequired,
    ServiceError,
    StaleWrite,
    SynchronousOnlyOperation,
    TableDoesNotExist,
    TransactionCanceled,
    UniqueCanceled,
    UniqueIncomplete,
    UnreadableItem,
    UnreadableItems,
    ValidationError,
)
from .expressions import F, Q
from .manager import BaseManager, Manager
from .models import Entity
from .options import Index
from .plan import Plan
from .query import Page, QuerySet, UnknownItem
from .tables import Table

__version__ = "0.1.0"

# The write path (transactions, batches, write planning: 13 modules, ~10 ms of a cold start) loads
# on first use, so a process that only reads never imports it. PEP 562: the names below are
# looked up by __getattr__ on first access.
_LAZY = {"Transaction": "transaction", "atransaction": "transaction", "transaction": "transaction"}

if TYPE_CHECKING:  # the lazy names, for type checkers and IDEs
    from .transaction import Transaction, atransaction, transaction


def __getattr__(name: str) -> Any:
    """Import a lazily loaded public name (``dynorm.transaction``, ...) on first access."""
    if name not in _LAZY:
        raise AttributeError(f"module 'dynorm' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    globals()[name] = value
    return value


class _Package(types.ModuleType):
    """The ``dynorm`` package: the import system, loading the submodule ``dynorm.transaction`` later
    (on a first write), binds it as the package's attribute ``transaction``; that must not hide the
    public function ``dynorm.transaction``."""

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, types.ModuleType) and name in _LAZY:
            value = getattr(value, name)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package

__all__ = [
    "AlreadyExists", "BaseManager", "BatchIncomplete", "Capture", "ConditionFailed", "ConfigurationError",
    "DoesNotExist", "DynormError", "Entity", "F", "Index", "IntegrityError",
    "InvalidCursor", "InvalidKeyValue", "InvalidQuery",
    "KeyChangeError", "KeyVersionBehind", "Manager", "ModelError", "MultipleObjectsReturned", "Page", "Plan", "Q",
    "QuerySet",
    "ReadBackFailed",
    "ScanRequired", "ServiceError", "Settings", "StaleWrite", "Stats", "SynchronousOnlyOperation", "Table",
    "TableDoesNotExist",
    "TransactionCanceled", "UniqueCanceled", "UniqueConstraint", "UniqueIncomplete",
    "UnknownItem", "UnreadableItem", "UnreadableItems", "ValidationError", "capture",
    "configure", "fields",
    "get_settings", "transaction", "Transaction", "__version__", "atransaction", "aclose",
]
