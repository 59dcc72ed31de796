"""dynorm: a Django-style ORM for DynamoDB single-table design, built on PynamoDB.

Declare a :class:`Table` and :class:`Entity` classes with key templates; query through
managers and lazy querysets (``Product.objects.filter(brand_id="3")`` is one Query).
See ``docs/`` for the tutorial and reference.
"""

from __future__ import annotations

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
from .transaction import Transaction, atransaction, transaction

__version__ = "0.1.0"

__all__ = [
    "AlreadyExists", "BaseManager", "BatchIncomplete", "Capture", "ConditionFailed", "ConfigurationError",
    "DoesNotExist", "DynormError", "Entity", "F", "Index", "IntegrityError",
    "InvalidCursor", "InvalidKeyValue", "InvalidQuery",
    "KeyChangeError", "KeyVersionBehind", "Manager", "ModelError", "MultipleObjectsReturned", "Page", "Plan", "Q",
    "QuerySet",
    "ReadBackFailed",
    "ScanRequired", "ServiceError", "Settings", "StaleWrite", "Stats", "SynchronousOnlyOperation", "Table",
    "TableDoesNotExist",
    "TransactionCanceled", "UniqueCanceled", "UniqueConstraint",
    "UnknownItem", "UnreadableItem", "UnreadableItems", "ValidationError", "capture",
    "configure", "fields",
    "get_settings", "transaction", "Transaction", "__version__", "atransaction", "aclose",
]
