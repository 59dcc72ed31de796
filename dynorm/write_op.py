"""The planned write (:class:`WriteOp`): one command object for single writes, transactions and batches.

A ``prepare_*`` planner (:mod:`dynorm.writes`) returns it holding the exact request; a sender sends it
alone (:mod:`dynorm.sender`), in a TransactWriteItems (:mod:`dynorm.transaction`) or a BatchWriteItem
(:mod:`dynorm.batch`), then calls :meth:`WriteOp.applied` (the only place an instance changes) or
:meth:`WriteOp.error` (a failed condition mapped to the error users see).
"""

from __future__ import annotations

import base64
import os
import warnings
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from ._deferred import defer
from .exceptions import AlreadyExists, ConditionFailed, DynormError, StaleWrite, ValidationError
from .fields import unreadable_item

if TYPE_CHECKING:  # pragma: no cover
    from ._protocols import EntityLike

__all__ = ["WriteOp", "TypedSource", "new_token", "other_entity_type", "decode_written"]


#: the value of a WriteOp's mapping not given: one shared read-only empty mapping, not an empty dict per op
#: (a ``bulk_create`` of 1,000 holds 1,000 ops until it returns, and each dict made counts towards the
#: garbage collector's next collection, issue 24)
NO_VALUES: Mapping[str, Any] = MappingProxyType({})


def _nothing() -> Mapping[str, Any]:
    return NO_VALUES


def new_token() -> str:
    """Return a fresh revision token: 16 URL-safe characters (96 random bits)."""
    return base64.urlsafe_b64encode(os.urandom(12)).decode("ascii")


@dataclass(frozen=True)
class TypedSource:
    """A value an update copies from a document path into a whole typed field (``n=F("stock__num")``),
    conditional on ``attribute_type(<source>, :T)`` (:func:`dynorm.write_update.prepare_update`).

    Attributes:
        target: the field written; source: the path copied (a :class:`dynorm.expressions.DocPath`);
        attr: the source field's attribute name; want: the DynamoDB type the target stores
        (``"S"``, ``"N"``, ``"SS"``, ...); missing_ok: ``if_not_exists`` (a missing source is fine).
    """

    target: str
    source: Any
    attr: str
    want: str
    missing_ok: bool = False

    def mismatch(self, raw: Mapping[str, Any]) -> str | None:
        """What the stored item ``raw`` holds at the source when it fails the type check, else ``None``."""
        av: Any = raw.get(self.attr)
        for part in self.source.parts:
            if not isinstance(av, Mapping):
                av = None
            elif isinstance(part, int):
                items = av.get("L")
                av = items[part] if isinstance(items, list) and part < len(items) else None
            else:
                inner = av.get("M")
                av = inner.get(part) if isinstance(inner, Mapping) else None
            if av is None:
                break
        if av is None:
            return None if self.missing_ok else "is missing on the stored item"
        kind = next(iter(av), "?") if isinstance(av, Mapping) else "?"
        return None if kind == self.want else f"holds a value of type {kind}"


@dataclass
class WriteOp:
    """One planned write.

    Attributes:
        kind: ``"Put"``, ``"Update"``, ``"Delete"`` or ``"ConditionCheck"`` (the DynamoDB action).
        verb: what the user asked: ``"create"``, ``"save"``, ``"update"``, ``"delete"``, ``"check"``.
        model: the entity class; instance: the instance written (if any).
        params: request parameters shared by the single and the transactional form.
        key: the primary key in DynamoDB JSON (identifies the item: no two ops of one
            transaction or batch may share it).
        description: ``"update Product product_id='01J…'"`` for messages.
        expected_version, new_version: optimistic-locking versions (``None`` when unversioned).
        local_changes: plain field values to apply to the instance once the write succeeded.
        key_values: key attributes (Python attribute name -> text) to set on the instance then.
        token: the revision token this write stores (``None`` for Delete and ConditionCheck).
        returns_item: the single-item form asks for ``ReturnValues=ALL_NEW``.
        once: a non-idempotent write (``F("n") + 1``, ``append()``) that no version condition
            protects: sent alone, it goes as a one-action TransactWriteItems whose
            ``ClientRequestToken`` (DynamoDB applies a token once for 10 minutes) makes botocore's
            retry of a lost request harmless even when another write landed in between.
        pins: fields a rewritten index key is built from that the write does not write, and the
            value each is pinned at by the condition (:func:`pin_key_sources`); pinned_as: of those
            pinned at the attribute as read, that attribute (DynamoDB JSON, ``None``: absent).
        expression_fields: fields whose new value the table computes (changed by an ``F()``
            expression; the version when the write increments it there): deferred on the instance
            when the item as written does not come back (their new values are not known).
        unread_after: the instance's ``_state.unread`` once written (``None``: unchanged).
        entity_key: the primary-key fields of the item (``{"sku": "A-1"}``), for an update.
        changes: an update's changes as asked (field -> value or ``F`` expression).
        may_create: an upsert (``save()`` of a new unversioned instance): it creates the item when
            none is stored, so an item of another entity type there is reported as
            :class:`AlreadyExists` rather than :class:`DoesNotExist`.
        typed_sources: values an update copies from document paths into whole typed fields, each
            conditional on its type (:class:`TypedSource`).
    """

    kind: str
    model: type[EntityLike]
    params: dict[str, Any]
    key: dict[str, Any]
    description: str
    instance: EntityLike | None = None
    verb: str = ""
    expected_version: int | None = None
    new_version: int | None = None
    local_changes: Mapping[str, Any] = field(default_factory=_nothing)
    key_values: Mapping[str, Any] = field(default_factory=_nothing)
    token: str | None = None
    returns_item: bool = False
    once: bool = False
    older_version: str | None = None
    pins: Mapping[str, Any] = field(default_factory=_nothing)
    pinned_as: Mapping[str, Any] = field(default_factory=_nothing)
    expression_fields: frozenset[str] = frozenset()
    unread_after: frozenset[str] | None = None
    entity_key: Mapping[str, Any] = field(default_factory=_nothing)
    changes: Mapping[str, Any] = field(default_factory=_nothing)
    may_create: bool = False
    typed_sources: tuple[TypedSource, ...] = ()
    # unique constraints (dynorm.write_unique): the sentinel actions sent with this write in one
    # TransactWriteItems, and the unique fields' values once written (the instance's _state.unique_as)
    # a tuple when there are none: every WriteOp of a bulk_create is held until its item went in, and
    # an empty list per op is one more object the garbage collector walks (issue 24)
    sentinels: Sequence[WriteOp] = ()
    unique_after: dict[str, Any] | None = None
    # the unique fields' stored values the write is conditional on (what the instance read)
    unique_before: dict[str, Any] | None = None

    @property
    def create(self) -> bool:
        """True when the write must not overwrite an existing item."""
        return self.verb == "create"

    @property
    def refuses_overwrite(self) -> bool:
        """True for a Put conditional on no item existing: ``create()``, or a versioned instance never written."""
        return self.kind == "Put" and (self.create or (self.expected_version is None and self.new_version == 1))

    @property
    def identity(self) -> tuple[str, str, str]:
        """(table, partition key, sort key) of the item written."""
        values = [next(iter(v.values())) for v in self.key.values()]
        return (self.params["TableName"], str(values[0]), str(values[1]) if len(values) > 1 else "")

    def request(self) -> tuple[str, dict[str, Any]]:
        """Return (operation, params) for sending this op alone."""
        params = dict(self.params)
        params["ReturnConsumedCapacity"] = "TOTAL"
        if self.returns_item:
            params["ReturnValues"] = "ALL_NEW"
        if "ConditionExpression" in params:
            params["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
        if self.kind == "ConditionCheck":
            # a lone condition check is a GetItem-free conditional no-op: an UpdateItem that
            # changes nothing would still write, so it is only offered inside transactions
            raise DynormError("a ConditionCheck can only be sent inside dynorm.transaction().")
        return f"{self.kind}Item", params

    def transact_item(self) -> dict[str, Any]:
        """Return this op as one element of TransactWriteItems' ``TransactItems``."""
        params = dict(self.params)
        if "ConditionExpression" in params:
            params["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
        return {self.kind: params}

    def applied_earlier(self, exc: ConditionFailed) -> bool:
        """True when a failed condition shows that an earlier attempt of this very write was applied.

        botocore retries a request whose response was lost; the retry then fails its
        condition against the item the first attempt wrote. For a Put or Update the stored
        item carries this op's token; for a Delete (no token to store) the item is gone and
        the failing response came from a retry (``exc.retry_attempts > 0``).
        """
        raw = exc.item
        if self.token is not None:
            rev = self.model._meta.table._meta.revision_attribute
            return bool(raw is not None and raw.get(rev) == {"S": self.token})
        return self.kind == "Delete" and raw is None and getattr(exc, "retry_attempts", 0) > 0

    def error(self, exc: ConditionFailed | None, raw_item: Mapping[str, Any] | None = None) -> DynormError:
        """Map a failed condition into the error users see (the table is unchanged).

        Each condition this write carries is asked in turn which of them failed, given the item
        as stored (``ReturnValuesOnConditionCheckFailure=ALL_OLD``, or ``raw_item``); the first
        that explains the failure gives the error, else a plain :class:`ConditionFailed`.
        """
        raw = raw_item if raw_item is not None else (exc.item if exc is not None else None)
        for explain in (self._older_version_error, self._taken_error, self._missing_or_stale_error,
                        self._copy_type_error, self._pinned_error, self._unique_moved_error):
            found = explain(raw)
            if found is not None:
                return found
        if self.verb == "save" and raw is None:
            return self.model.DoesNotExist(
                f"{self.model.__name__} with {_describe(self)} does not exist (deleted, or moved to another key "
                "version by a migration, since it was read); nothing was written: save() of an instance read "
                "from the table and save(update_fields=...) change existing items only. Read it again (with the "
                "current models), or create() it.")
        item, unreadable = decode_written(self.model, raw) if raw else (None, None)
        error = ConditionFailed(f"{self.description}: the condition did not hold; nothing was written."
                                + (f" The stored item cannot be read whole ({unreadable}); it is in .raw."
                                   if unreadable is not None else ""), item=item)
        error.raw = dict(raw) if raw else None  # type: ignore[attr-defined]
        error.unreadable = unreadable  # type: ignore[attr-defined]
        return error

    def _older_version_error(self, raw: Mapping[str, Any] | None) -> DynormError | None:
        if self.older_version is None:  # else a check of prepare_create_checks: an item under an older key version
            return None
        older = AlreadyExists(
            f"{self.description}: an item with this primary key exists under the older key version "
            f"{self.older_version!r} (Meta.read_versions), so get() "
            "reads it; nothing was written. Read it with get() and save() it (which moves it to the current "
            "key version).")
        older.older_version = self.older_version  # type: ignore[attr-defined]
        return older

    def _taken_error(self, raw: Mapping[str, Any] | None) -> DynormError | None:
        """A create that found an item there, or any write that found another entity type's item."""
        name = self.model.__name__
        other = other_entity_type(self.model, raw)
        if self.create or (self.kind == "Put" and self.expected_version is None and self.new_version == 1):
            if other is not None:
                taken = AlreadyExists(f"{name} with {_describe(self)} cannot be created: {other} is stored under this "
                                      "key; nothing was overwritten. Give the two entity types distinct key templates "
                                      "(dynorm check reports the overlap), or use another key.")
                taken.other_entity = other  # type: ignore[attr-defined]
                return taken
            return AlreadyExists(f"{name} with {_describe(self)} already exists; nothing was overwritten. "
                                 "Read it with get() or change it with save() on the instance read.")
        if other is None:
            return None
        # every write by key is conditional on the stored entity type: the item there is not
        # this entity's (get() does not return it either), so it was left exactly as it was
        if self.may_create:
            taken = AlreadyExists(
                f"{name} with {_describe(self)} cannot be saved: {other} is stored under this key, and "
                f"saving this new {name} would overwrite it; nothing was written. Give the two entity types "
                "distinct key templates (dynorm check reports the overlap), or use another key.")
            taken.other_entity = other  # type: ignore[attr-defined]
            return taken
        return self.model.DoesNotExist(
            f"{name} with {_describe(self)} does not exist: {other} is stored under this key, and a {name} "
            f"write never changes an item of another entity type ({name}.objects.get() does not return it "
            "either); nothing was written. Change it through its own entity class, or give the two entity "
            "types distinct key templates (dynorm check reports the overlap).")

    def _missing_or_stale_error(self, raw: Mapping[str, Any] | None) -> DynormError | None:
        """An update of a missing item, or a versioned write whose version moved on."""
        name = self.model.__name__
        if self.verb == "update" and raw is None:
            return self.model.DoesNotExist(
                f"{name} with {_describe(self)} does not exist; update() changes existing items only "
                "(use create() or get_or_create()).")
        vf = self.model._meta.version_field
        if not vf or self.expected_version is None:
            return None
        stored = None
        if raw is not None:
            av = raw.get(self.model._meta.fields[vf].attr_name)
            stored = int(av["N"]) if av else None
        if raw is not None and stored == self.expected_version:
            return None
        what = "was deleted" if raw is None else f"is now at version {stored}"
        return StaleWrite(
            f"{name} with {_describe(self)} changed since it was read (expected version "
            f"{self.expected_version}, it {what}); nothing was written. Re-read it "
            "(refresh_from_db()) and apply the change again, or use update_with_retry().")

    def _copy_type_error(self, raw: Mapping[str, Any] | None) -> DynormError | None:
        """An ``F()`` copy whose source holds another type than the target field stores."""
        wrong = [(t, what) for t in self.typed_sources for what in [t.mismatch(raw)] if what] if raw else []
        if not wrong:
            return None
        t, what = wrong[0]
        name = self.model.__name__
        tf = self.model._meta.fields[t.target]
        fix = (f"give a default with F({t.source.name!r}).if_not_exists(value), or set {t.source.shown} first"
               if "missing" in what else f"store a value of type {t.want} at {t.source.shown}, or convert it "
               f"in Python (read the item, then update({t.target}=...))")
        return ValidationError(
            f"{self.description}: {name}.{t.target} = F({t.source.name!r}): {t.source.shown} {what}, and "
            f"{t.target} is a {type(tf).__name__} field (stored as {t.want}), so DynamoDB refused the copy "
            f"(condition attribute_type({t.source.shown}, {t.want})); nothing was written. To copy it, {fix}.",
            entity=name, field=t.target)

    def _pinned_error(self, raw: Mapping[str, Any] | None) -> DynormError | None:
        """A field an index key this write rewrites depends on is not what the write assumed."""
        broken = _pins_broken(self, raw) if raw is not None else []
        if not broken:
            return None
        what = "; ".join(f"{n} is {stored!r} in the table, not {held!r} as this write assumed"
                         for n, held, stored in broken)
        it = "it" if len(broken) == 1 else "them"
        return StaleWrite(
            f"{self.model.__name__} with {_describe(self)}: {what}. An index key this write rewrites depends on "
            f"{it} (is built from {it}, or shares an attribute with an index built from {it}), so nothing was "
            "written (the key would have disagreed with the stored fields). Either the item changed since it was "
            "read (safe to retry: re-read it with refresh_from_db() and apply the change again, or use "
            "update_with_retry()), or the field was assigned and not written (write it too: update_fields=[...]).")

    def _unique_moved_error(self, raw: Mapping[str, Any] | None) -> DynormError | None:
        """A stored unique value changed since the instance read it (its sentinel swap would be wrong)."""
        moved = _unique_moved(self, raw) if raw is not None else []
        if not moved or raw is None:
            return None
        item, _ = decode_written(self.model, raw)
        what = "; ".join(f"{n} is {stored!r} in the table, not {held!r} as read" for n, held, stored in moved)
        return ConditionFailed(
            f"{self.description}: the stored unique value changed since this instance read it ({what}), so "
            "nothing was written (its sentinel swap would have released a value this item no longer holds). "
            "Re-read it (refresh_from_db()) and apply the change again.", item=item)

    def applied(self, attributes: Mapping[str, Any] | None = None) -> EntityLike | None:
        """Apply a successful write to the instance and return it (the only place an instance changes).

        Args:
            attributes: the item as written (``ReturnValues=ALL_NEW``), when the request returned it.

        Returns:
            the instance (built from ``attributes`` when the op had none), or ``None``.
        """
        obj = self.instance
        if obj is None:
            return decode_written(self.model, attributes, self.description)[0] if attributes is not None else None
        state = obj._state
        decoded = None
        if attributes is not None:
            decoded, _ = decode_written(self.model, attributes, self.description, whole_only=True)
        if decoded is not None:
            obj.attribute_values = decoded.attribute_values
            state.read_as = decoded._state.read_as
            state.unique_as = decoded._state.unique_as
            state.partial = False
            state.deferred = None
            state.unread = frozenset()
        else:  # nothing returned, or the item as written cannot be read: keep the planned values
            values = obj.attribute_values
            for name, value in self.key_values.items():
                if value is None:
                    values.pop(name, None)
                else:
                    values[name] = value
            for name, value in self.local_changes.items():
                setattr(obj, name, value)
                state.read_as.pop(name, None)  # stored as this write serialised it
            vf = self.model._meta.version_field
            if vf and self.new_version is not None:
                setattr(obj, vf, self.new_version)
            # an F() result did not come back: the old value must not stand beside the new
            # version (a later save() would write it back), so it is loaded on first read
            defer(obj, self.expression_fields)
            if self.unread_after is not None:
                state.unread = self.unread_after
        if self.unique_after is not None:
            state.unique_as = {**state.unique_as, **self.unique_after}
        if self.kind != "Delete":
            state.adding = False
            state.fallback = None
            state.fallback_revision = None
        return obj

    def applied_unread(self) -> EntityLike:
        """Apply a write whose item as written did not come back (a TransactWriteItems), and return the instance.

        The instance (built from the key when the write had none) holds the values the write
        set; what the table computed (``F()`` results, a version incremented there) and, for a
        write by key, every field the write did not set, is deferred: loaded with one consistent
        GetItem on first read, so it never shows a value from before the write (nor an ``F``).
        """
        if self.instance is not None:
            return self.applied(None)  # type: ignore[return-value]
        meta = self.model._meta
        obj = self.model(**self.entity_key)
        obj._state.adding = False
        obj.attribute_values.update(self.local_changes)
        defer(obj, {n for n in meta.fields if n not in meta.key_fields and n not in self.local_changes})
        return obj


def other_entity_type(model: type[EntityLike], raw: Mapping[str, Any] | None) -> str | None:
    """Describe ``raw`` when it is not of ``model``'s entity type (``"a Dog (entity type 'DOG')"``), else ``None``.

    Args:
        model: the entity class written; raw: the stored item (DynamoDB JSON) a failed condition
            returned, or ``None`` (no item).
    """
    if raw is None:
        return None
    meta = model._meta
    type_attr = meta.table._meta.type_attribute
    stored = raw.get(type_attr)
    if stored == {"S": meta.entity_type}:
        return None
    text = stored.get("S") if isinstance(stored, Mapping) else None
    if text is None:
        return f"an item without an entity type (no {type_attr!r} attribute: written by another writer)"
    cls = meta.table._entities.get(text)
    if cls is None:
        return f"an item of entity type {text!r}, which no model declares"
    return f"a {cls.__name__} (entity type {text!r})"


def decode_written(model: type[EntityLike], raw: Mapping[str, Any], description: str | None = None, *,
                   whole_only: bool = False) -> tuple[EntityLike | None, Any]:
    """Decode an item a write returned, never failing the write because of it.

    An attribute another writer stored with a type the model does not read would make the
    decoding raise although the write was applied. Here the problem is reported as a
    :class:`RuntimeWarning` naming item and attribute (when ``description`` is given) and the
    item is decoded without the unreadable attributes.

    Args:
        model: the entity class; raw: the item in DynamoDB JSON; description: the write, for
            the warning (``None``: no warning); whole_only: return ``None`` rather than an
            instance missing attributes.

    Returns:
        (instance or ``None``, the :class:`dynorm.UnreadableItem` describing the first problem or ``None``).
    """
    data = dict(raw)
    first = None
    tmeta = model._meta.table._meta
    for _ in range(len(data) + 1):
        try:
            obj = model.from_raw_data(dict(data))
        except Exception as exc:  # noqa: BLE001 - pynamodb raises several kinds
            problem = unreadable_item(model, data, exc, (tmeta.pk_attribute, tmeta.sk_attribute or ""))
            if first is None:
                first = problem
                if description is not None:
                    warnings.warn(f"{description} was applied, but the item as written cannot be read whole: "
                                  f"{problem}", RuntimeWarning, stacklevel=4)
            if whole_only or problem.attribute is None or problem.attribute not in data:
                return None, first
            data.pop(problem.attribute)
            continue
        if first is not None:
            obj._state.partial = True  # not whole: saving it whole would drop what could not be read
        return obj, first
    return None, first


def _describe(op: WriteOp) -> str:
    # every description in this module is "<verb> <Entity> <key fields>"
    return op.description.split(" ", 2)[2]



def _unique_moved(op: WriteOp, raw: Mapping[str, Any]) -> list[tuple[str, Any, Any]]:
    """(field, value read, value stored) of each unique field whose stored value is not the one the write assumed."""
    if not op.unique_before:
        return []
    fields = op.model._meta.fields
    out = []
    for name, held in op.unique_before.items():
        f = fields[name]
        av = raw.get(f.attr_name)
        stored = f.deserialize(av[f.attr_type]) if av and f.attr_type in av else None  # type: ignore[attr-defined]
        if stored != held:
            out.append((name, held, stored))
    return out


def _pins_broken(op: WriteOp, raw: Mapping[str, Any]) -> list[tuple[str, Any, Any]]:
    """(field, value pinned, value stored) of each pinned field the stored item no longer matches."""
    if not op.pins:
        return []
    item, _ = decode_written(op.model, raw)
    out = []
    for name, value in op.pins.items():
        stored = item.attribute_values.get(name) if item is not None else None
        f = op.model._meta.fields[name]
        held = raw.get(f.attr_name)
        if name in op.pinned_as:  # pinned at the attribute as read
            moved = held != op.pinned_as[name]
        else:  # pinned at the value as it serialises (a present attribute in another form fails it)
            moved = value is not None and held is not None and held != {f.attr_type: f.serialize(value)}
        if stored != value or moved:
            out.append((name, value, stored))
    return out
