"""Every error dynorm raises; each message says what went wrong and what to do next.

All errors derive from :class:`DynormError`, so ``except dynorm.DynormError`` catches
anything dynorm itself raises. Errors coming from DynamoDB are wrapped once, keeping the
botocore error as ``__cause__``.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence


class DynormError(Exception):
    """Root of every dynorm error."""


class ConfigurationError(DynormError):
    """Settings (``dynorm.yaml``, environment, :func:`dynorm.configure`) are invalid."""


class KeyVersionBehind(ConfigurationError):
    """The code's key version of an entity is one the table's migration ledger has retired.

    A deploy rolled back by reverting code after ``dynorm migrate`` moved the entity's items to a
    newer key version (or deleted its old version): the older entity would miss every moved item
    and write second copies at the old keys, which the newer code never sees. Raised before the
    entity's first request to the table (nothing is sent); the message names the safe deploy
    order (docs/migrations.md, "Rolling back a deploy that included a rekey"). Turn the check off
    with ``check_key_versions: false`` in dynorm.yaml or ``dynorm.configure(check_key_versions=False)``.

    Attributes:
        entity: the entity class name; entity_type: its stored type.
        table: the physical table name.
        code_version: ``Meta.key_version`` of the code; ledger_version: the key version the ledger has.
        migration: the migration that retired ``code_version``.
    """

    def __init__(self, message: str, *, entity: str, entity_type: str, table: str, code_version: str,
                 ledger_version: str, migration: str) -> None:
        super().__init__(message)
        self.entity = entity
        self.entity_type = entity_type
        self.table = table
        self.code_version = code_version
        self.ledger_version = ledger_version
        self.migration = migration


class ModelError(DynormError):
    """An entity or table declaration is invalid (raised at class definition or by ``check``)."""


class ValidationError(DynormError, ValueError):
    """A field value is invalid; raised before any request is sent.

    Attributes:
        entity: the entity class name.
        field: the field name (``None`` when the error is about the whole item).
        value: the offending value.
    """

    def __init__(self, message: str, *, entity: str | None = None, field: str | None = None,
                 value: Any = None) -> None:
        super().__init__(message)
        self.entity = entity
        self.field = field
        self.value = value


class InvalidKeyValue(ValidationError):
    """A value cannot be put into a key template (empty, ``None`` or of the wrong type)."""


class InvalidQuery(DynormError, ValueError):
    """A queryset was built with an unknown field, lookup or option; raised before any I/O."""


class ScanRequired(InvalidQuery):
    """No key or index serves the filter; use ``.scan()`` to ask for a Scan explicitly."""


class InvalidCursor(DynormError, ValueError):
    """A pagination cursor was tampered with, belongs to another query, or is stale."""


class SynchronousOnlyOperation(DynormError):
    """A blocking request was asked for inside a running asyncio event loop (as Django's
    ``SynchronousOnlyOperation``): reading a deferred field (``only()``) there would send a sync
    GetItem that stalls every task of the loop. Load the fields with ``await obj.arefresh_from_db(...)``
    or do not defer them."""


class _EntityError(DynormError):
    """Errors declared per entity (``Issue.DoesNotExist``): shown under their qualified name."""

    def __repr__(self) -> str:
        return f"{type(self).__qualname__}({', '.join(map(repr, self.args))})"


class DoesNotExist(_EntityError):
    """The item asked for with ``get()`` is not in the table (base of ``Entity.DoesNotExist``)."""


class MultipleObjectsReturned(_EntityError):
    """``get()`` matched more than one item (base of ``Entity.MultipleObjectsReturned``)."""


class WriteError(DynormError):
    """Base of errors from a write that DynamoDB refused; the table is unchanged."""


class AlreadyExists(WriteError):
    """``create()`` found an item with the same primary key; nothing was overwritten."""


class StaleWrite(WriteError):
    """Optimistic locking: the item changed (or vanished) since it was read.

    Also raised, versioned or not, when a write rewrites an index key and a field that key is
    built from (read, and pinned at its value read) no longer holds that value: writing the key
    would have left it disagreeing with the stored fields. Nothing was written.

    Re-read it (``obj.refresh_from_db()``) and apply the change again, or use
    ``Entity.objects.update_with_retry``.
    """


class ConditionFailed(WriteError):
    """A write's condition did not hold.

    Attributes:
        item: the item as it now stands in the table (an entity instance), or ``None``
            when the item does not exist.
    """

    def __init__(self, message: str, item: Any = None) -> None:
        super().__init__(message)
        self.item = item


class KeyChangeError(WriteError, ValueError):
    """A field that is part of the primary key was changed; keys are immutable."""


class BatchIncomplete(WriteError):
    """Some items of a batch did not go in: unprocessed after all retries, or DynamoDB refused
    (or never answered) one of the batch's requests, which stops the batch.

    Attributes:
        unprocessed: the keys (entity key dicts) not written / not read, including ``uncertain``.
        written: the keys written (for writes; empty for reads).
        uncertain: the keys of a request that got no answer (connection lost): they may or may
            not have been written; writing them again is safe (a batch put or delete is idempotent).
    """

    def __init__(self, message: str, unprocessed: Sequence[Any] = (), *, written: Sequence[Any] = (),
                 uncertain: Sequence[Any] = ()) -> None:
        super().__init__(message)
        self.unprocessed = [*unprocessed, *uncertain]
        self.written = list(written)
        self.uncertain = list(uncertain)


class ReadBackFailed(DynormError):
    """A write was applied, but the request that reads the item back afterwards failed.

    No dynorm call raises it any more: an unversioned ``update()`` with ``+``, ``-`` or
    ``append()`` is one TransactWriteItems (applied exactly once, under a ClientRequestToken) and
    reads nothing back; the fields it computed are loaded on first read, where a failed read
    raises the read's own error and leaves them deferred (docs/writing.md). The class stays so
    that code catching it keeps working. It meant: the write **stands**, sending it again would
    apply it a second time. Not a :class:`WriteError` (the table did change) and not a
    :class:`ServiceError` (retrying the call is wrong); the failed read was the ``__cause__``.

    Attributes:
        key: the primary-key fields of the item written (``{"sku": "A-1"}``).
        instance: the instance written, as far as it is known without the read: the values the
            write set; the fields an expression changed (and, for a write by key, every field it
            did not set) are deferred, loaded with one GetItem on first read.
        changes: the changes the write applied (field -> value or ``F`` expression).
    """

    def __init__(self, message: str, *, key: Mapping[str, Any], instance: Any = None,
                 changes: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.key = dict(key)
        self.instance = instance
        self.changes = dict(changes or {})


class TransactionCanceled(WriteError):
    """A transaction was cancelled; nothing of it was written.

    Attributes:
        reasons: one ``{"action": int, "code": str, "message": str}`` per action.
    """

    def __init__(self, message: str, reasons: Sequence[Mapping[str, Any]] = ()) -> None:
        super().__init__(message)
        self.reasons = list(reasons)


class CreateCanceled(TransactionCanceled, AlreadyExists):
    """A transaction was cancelled because a ``tx.create()`` (or the save of a new versioned
    instance) found an item with its primary key under an older key version of
    ``Meta.read_versions``; nothing of the transaction was written.

    Both a :class:`TransactionCanceled` (``.reasons`` per action) and an :class:`AlreadyExists`.
    """


class IntegrityError(WriteError):
    """A write would break a unique constraint (``fields.String(unique=True)``, ``Meta.constraints``).

    Raised before any request when one write (or one transaction) itself claims a value twice,
    and after DynamoDB refused the write because another item holds the value; either way
    nothing was written.

    Attributes:
        entity: the entity class name; constraint: the constraint's name; fields: its field
            names; values: the values refused (field -> value).
    """

    def __init__(self, message: str, *, entity: str | None = None, constraint: str | None = None,
                 fields: Sequence[str] = (), values: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.entity = entity
        self.constraint = constraint
        self.fields = tuple(fields)
        self.values = dict(values or {})


class UniqueCanceled(TransactionCanceled, IntegrityError):
    """A transaction was cancelled because one of its writes would break a unique constraint;
    nothing of the transaction was written.

    Both a :class:`TransactionCanceled` (``.reasons`` per action) and an :class:`IntegrityError`
    (``.entity``, ``.constraint``, ``.values`` of the first value refused).
    """

    def __init__(self, message: str, reasons: Sequence[Mapping[str, Any]] = (), *,
                 cause: IntegrityError | None = None) -> None:
        TransactionCanceled.__init__(self, message, reasons)
        self.entity = cause.entity if cause else None
        self.constraint = cause.constraint if cause else None
        self.fields = cause.fields if cause else ()
        self.values = cause.values if cause else {}


class UniqueIncomplete(BatchIncomplete, IntegrityError):
    """``bulk_create``/``bulk_delete`` on an entity with unique constraints stopped at an item that would break
    one (its value is taken); the items before it were written (each is its own TransactWriteItems: the
    batch is not atomic across items), that item and the ones after it were not.

    Both a :class:`BatchIncomplete` (``.written``, ``.unprocessed``) and an :class:`IntegrityError`
    (``.entity``, ``.constraint``, ``.values`` of the value refused).
    """

    def __init__(self, message: str, unprocessed: Sequence[Any] = (), *, written: Sequence[Any] = (),
                 cause: IntegrityError) -> None:
        BatchIncomplete.__init__(self, message, unprocessed, written=written)
        self.entity = cause.entity
        self.constraint = cause.constraint
        self.fields = cause.fields
        self.values = cause.values


class UnreadableItem(DynormError):
    """One stored item that cannot be decoded into its entity class.

    Typically another writer stored an attribute with a type the field does not read
    (``qty`` as a string), or text the field cannot parse (a malformed datetime).

    Attributes:
        entity: the entity class name the item's type attribute names.
        key: the item's table key, ``{attribute name: value}`` (``{"PK": "...", "SK": "..."}``).
        attribute: the attribute that could not be read (``None`` when it cannot be told).
        stored: that attribute as stored, in DynamoDB JSON (``{"S": "ten"}``).
        raw: the whole item in DynamoDB JSON, to repair or read by hand.
    """

    def __init__(self, message: str, *, entity: str, key: Mapping[str, Any], attribute: str | None,
                 stored: Any, raw: Mapping[str, Any]) -> None:
        super().__init__(message)
        self.entity = entity
        self.key = dict(key)
        self.attribute = attribute
        self.stored = stored
        self.raw = raw


class UnreadableItems(DynormError):
    """Some items a read returned could not be decoded; the rest of the results are kept.

    Raised once the read is complete (``list()``, ``get()``, ``page()``, collections, ...),
    so one bad item never hides the others: they are in ``items``. To read past bad items
    instead of raising, use ``qs.skip_unreadable()`` (they are then listed in
    ``qs.unreadable`` and ``Page.unreadable``).

    Attributes:
        errors: one :class:`UnreadableItem` per item that could not be decoded.
        items: the results that did decode, in order (for ``page()``: that page's items).
        cursor: for ``page()``, the cursor of the next page (``None`` otherwise or at the end).
    """

    def __init__(self, message: str, errors: Sequence[UnreadableItem], items: Sequence[Any] = (),
                 cursor: str | None = None) -> None:
        super().__init__(message)
        self.errors = list(errors)
        self.items = list(items)
        self.cursor = cursor


class TableDoesNotExist(DynormError):
    """The physical table is missing; run ``dynorm migrate`` (or ``Table.create_table()``)."""


class ServiceError(DynormError):
    """DynamoDB refused a request for a reason dynorm does not map to a narrower error.

    Attributes:
        code: the DynamoDB error code (``ValidationException``, ...).
        operation: the DynamoDB operation (``Query``, ...).
        maybe_applied: True for a write that got no answer (a lost connection, a timeout): DynamoDB
            may have applied it (an increment sent again would count twice); read the item before
            sending it again. False when DynamoDB answered (it applied nothing) and for reads.
    """

    def __init__(self, message: str, *, code: str = "", operation: str = "", maybe_applied: bool = False) -> None:
        super().__init__(message)
        self.code = code
        self.operation = operation
        self.maybe_applied = maybe_applied
