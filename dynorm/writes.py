"""Pure planning of writes: PutItem, UpdateItem, DeleteItem and ConditionCheck requests.

Each ``prepare_*`` function validates its input (before any I/O), renders key attributes with
the one key renderer (:meth:`dynorm.options.Options.key_attributes`) and conditions, and returns
a :class:`WriteOp` holding the exact request. The same op is sent alone (:mod:`dynorm.sender`)
or inside a TransactWriteItems (:mod:`dynorm.transaction`) or a BatchWriteItem
(:mod:`dynorm.batch`); the sender then calls ``op.applied(...)`` or ``op.error(...)``.
Nothing here does I/O and nothing here changes an instance: only :meth:`WriteOp.applied` does,
after the write succeeded (through the instance's ``_state``).

**Revision token.** Every Put and Update sets the table's revision attribute
(``_dynorm_rev`` by default) to a fresh random token. When botocore retries a request whose
response was lost although DynamoDB applied it, the retry's condition fails and DynamoDB
returns the stored item (``ReturnValuesOnConditionCheckFailure=ALL_OLD``): finding our own
token there proves the first attempt was applied, so the write is reported as done, exactly
once, at no extra request. Idempotent updates that no other condition protects carry the
condition ``attribute_not_exists(rev) OR rev <> :token`` for that purpose. That condition cannot
protect a non-idempotent update (``F("n") + 1``, ``append()``) when another write lands between
the lost attempt and the retry (the stored token is no longer ours), so such an update without a
version condition is marked ``once`` and sent as a one-action TransactWriteItems with a
``ClientRequestToken`` (see :mod:`dynorm.sender`).
"""

from __future__ import annotations

import base64
import datetime as _dt
import os
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from . import _codec
from ._deferred import defer
from .exceptions import (
    AlreadyExists,
    ConditionFailed,
    DynormError,
    InvalidKeyValue,
    KeyChangeError,
    StaleWrite,
    ValidationError,
)
from .expressions import ExpressionBuilder, F, Q, field_of, plain_value, serialize_value
from .fields import unreadable_item

if TYPE_CHECKING:  # pragma: no cover
    from ._protocols import EntityLike
    from .options import Options

__all__ = ["WriteOp", "new_token", "prepare_put", "prepare_delete", "prepare_update", "prepare_check",
           "primary_key_of",
           "check_key_sizes", "check_lsi_values", "decode_written", "is_instance", "unchanged_condition",
           "prepare_move_to_current", "older_keys", "prepare_delete_older", "prepare_create_checks",
           "prepare_older_checks", "other_entity_type",
           "check_index_attributes"]


def new_token() -> str:
    """Return a fresh revision token: 16 URL-safe characters (96 random bits)."""
    return base64.urlsafe_b64encode(os.urandom(12)).decode("ascii")


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
        expression_fields: fields changed by an ``F()`` expression: deferred on the instance when
            the item as written does not come back (their new values are not known).
        unread_after: the instance's ``_state.unread`` once written (``None``: unchanged).
        entity_key: the primary-key fields of the item (``{"sku": "A-1"}``), for an update.
        changes: an update's changes as asked (field -> value or ``F`` expression).
        may_create: an upsert (``save()`` of a new unversioned instance): it creates the item when
            none is stored, so an item of another entity type there is reported as
            :class:`AlreadyExists` rather than :class:`DoesNotExist`.
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
    local_changes: dict[str, Any] = field(default_factory=dict)
    key_values: dict[str, Any] = field(default_factory=dict)
    token: str | None = None
    returns_item: bool = False
    once: bool = False
    older_version: str | None = None
    pins: dict[str, Any] = field(default_factory=dict)
    pinned_as: dict[str, Any] = field(default_factory=dict)
    expression_fields: frozenset[str] = frozenset()
    unread_after: frozenset[str] | None = None
    entity_key: dict[str, Any] = field(default_factory=dict)
    changes: dict[str, Any] = field(default_factory=dict)
    may_create: bool = False

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
        """Map a failed condition into the error users see (the table is unchanged)."""
        raw = raw_item if raw_item is not None else (exc.item if exc is not None else None)
        name = self.model.__name__
        if self.older_version is not None:  # a check of prepare_create_checks: an item under an older key version
            older = AlreadyExists(
                f"{self.description}: an item with this primary key exists under the older key version "
                f"{self.older_version!r} (Meta.read_versions), so get() "
                "reads it; nothing was written. Read it with get() and save() it (which moves it to the current "
                "key version).")
            older.older_version = self.older_version  # type: ignore[attr-defined]
            return older
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
        if other is not None:
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
        if self.verb == "update" and raw is None:
            return self.model.DoesNotExist(
                f"{name} with {_describe(self)} does not exist; update() changes existing items only "
                "(use create() or get_or_create()).")
        vf = self.model._meta.version_field
        if vf and self.expected_version is not None:
            stored = None
            if raw is not None:
                av = raw.get(self.model._meta.fields[vf].attr_name)
                stored = int(av["N"]) if av else None
            if raw is None or stored != self.expected_version:
                what = "was deleted" if raw is None else f"is now at version {stored}"
                return StaleWrite(
                    f"{name} with {_describe(self)} changed since it was read (expected version "
                    f"{self.expected_version}, it {what}); nothing was written. Re-read it "
                    "(refresh_from_db()) and apply the change again, or use update_with_retry().")
        broken = _pins_broken(self, raw) if raw is not None else []
        if broken:
            what = "; ".join(f"{n} is {stored!r} in the table, not {held!r} as this write assumed"
                             for n, held, stored in broken)
            it = "it" if len(broken) == 1 else "them"
            return StaleWrite(
                f"{name} with {_describe(self)}: {what}. An index key this write rewrites depends on {it} (is built "
                f"from {it}, or shares an attribute with an index built from {it}), so nothing was written (the key "
                "would have disagreed with the stored fields). Either the item changed since it was read (safe to "
                "retry: re-read it with refresh_from_db() and apply the change again, or use update_with_retry()), "
                "or the field was assigned and not written (write it too: update_fields=[...]).")
        if self.verb == "save" and raw is None:
            return self.model.DoesNotExist(
                f"{name} with {_describe(self)} does not exist (deleted, or moved to another key version by a "
                "migration, since it was read); nothing was written: save() of an instance read from the table "
                "and save(update_fields=...) change existing items only. Read it again (with the current "
                "models), or create() it.")
        item, unreadable = decode_written(self.model, raw) if raw else (None, None)
        error = ConditionFailed(f"{self.description}: the condition did not hold; nothing was written."
                                + (f" The stored item cannot be read whole ({unreadable}); it is in .raw."
                                   if unreadable is not None else ""), item=item)
        error.raw = dict(raw) if raw else None  # type: ignore[attr-defined]
        error.unreadable = unreadable  # type: ignore[attr-defined]
        return error

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
        if self.kind != "Delete":
            state.adding = False
            state.fallback = None
            state.fallback_revision = None
        return obj

    def applied_unread(self) -> EntityLike:
        """Apply a write that succeeded but whose item as written could not be read, and return the instance.

        The instance (built from the key when the write had none) holds the values the write
        set; what the write changed with expressions, and for a write by key every field it did
        not set, is deferred (loaded with one consistent GetItem on first read), so it never
        shows a value from before the write.
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


#: DynamoDB's limit on the length of one expression string (bytes).
MAX_EXPRESSION_BYTES = 4096


def _type_condition(b: ExpressionBuilder, meta: Options, *, or_absent: bool = False) -> str:
    """The condition that the stored item is of ``meta``'s entity type (``#type = :type``).

    Every write by key carries it on its own request, so a write aimed at an item of another entity
    type stored under the same key (``class Dog(Animal)`` keeping Animal's key templates) changes
    nothing and fails, as ``get()`` of that key finds nothing. ``#type = :type`` also means the item
    exists. ``or_absent``: the write may also create the item (an upsert, a delete of nothing), so
    ``attribute_not_exists(PK) OR #type = :type``.
    """
    tmeta = meta.table._meta
    match = f"{b.name(tmeta.type_attribute)} = {b.value({'S': meta.entity_type})}"
    return f"attribute_not_exists({b.name(tmeta.pk_attribute)}) OR {match}" if or_absent else match


def _grouped(expr: str) -> bool:
    """True when ``expr`` is one parenthesised group as a whole (``(a OR b)``, not ``(a) OR (b)``).

    DynamoDB refuses redundant parentheses (``((a OR b))``). Names and values are placeholders, so
    every parenthesis in a condition is syntax.
    """
    if not (expr.startswith("(") and expr.endswith(")")):
        return False
    depth = 0
    for i, ch in enumerate(expr):
        depth += (ch == "(") - (ch == ")")
        if depth == 0 and i < len(expr) - 1:
            return False
    return True


def _finish(params: dict[str, Any], b: ExpressionBuilder, conditions: list[str], entity: str = "?") -> None:
    conditions = [c for c in conditions if c]
    if conditions:
        # each condition is one group, so an OR inside one never binds to the AND around it
        params["ConditionExpression"] = " AND ".join(
            f"({c})" if len(conditions) > 1 and not _grouped(c) else c for c in conditions)
    for what in ("UpdateExpression", "ConditionExpression"):
        size = len(params.get(what, "").encode("utf-8"))
        if size > MAX_EXPRESSION_BYTES:
            # refused here rather than by DynamoDB after a request (an entity of ~270 fields
            # or more cannot be saved whole as one UpdateItem)
            raise ValidationError(
                f"{entity}: the {what} of this write would be {size} bytes, over DynamoDB's "
                f"{MAX_EXPRESSION_BYTES}-byte limit; write fewer fields at once (save(update_fields=[...]) "
                "or update()).", entity=entity)
    if b.names:
        params["ExpressionAttributeNames"] = dict(b.names)
    if b.values:
        params["ExpressionAttributeValues"] = dict(b.values)


def check_key_sizes(meta: Any, attributes: Mapping[str, Any], values: Mapping[str, Any]) -> None:
    """Refuse key attributes longer than DynamoDB allows, measured on their final text.

    Args:
        meta: the entity's ``Options``.
        attributes: key attribute name -> rendered value (text, ``{"S": text}``, or ``None`` for
            a sparse index), as they would be sent: table keys and index keys alike.
        values: field name -> value, to name the field and value behind a too-long key.

    Raises:
        InvalidKeyValue: a partition key over 2048 bytes or a sort key over 1024 bytes (UTF-8),
            naming the entity, the attribute, the longest field in its template and its value.
    """
    tmeta = meta.table._meta
    for attr, rendered in attributes.items():
        text = rendered.get("S") if isinstance(rendered, dict) else rendered
        if not isinstance(text, str) or len(text) <= _ALWAYS_FITS:
            continue
        # an attribute that is a sort key anywhere (table, GSI, LSI) gets the sort-key limit
        sort_attrs = {tmeta.sk_attribute, *(sk for _, sk in tmeta.gsis.values()), *tmeta.lsis.values()}
        problem = _codec.key_size_problem(text, attr not in sort_attrs)
        if problem is None:
            continue
        sources = [f for b in meta.all_indexes for t, a in ((b.pk, b.pk_attr), (b.sk, b.sk_attr))
                   if t is not None and a == attr for f in t.fields]
        sources += [n for n, f in meta.fields.items() if f.attr_name == attr]  # an LSI on a field's attribute
        if attr in sort_attrs and attr != tmeta.sk_attribute:
            roles = [name for name, (_, sk) in tmeta.gsis.items() if sk == attr]
            roles += [name for name, sk in tmeta.lsis.items() if sk == attr]
            problem += f" ({attr} is the sort key of index {', '.join(roles)})"
        field = max(sources, key=lambda f: len(str(values.get(f, ""))), default=None)
        value = values.get(field) if field else text
        raise InvalidKeyValue(
            f"{meta.entity}.{field or attr}={_short(value)}: key attribute {attr} would be {problem}; "
            "shorten the value (or keep it out of key templates). Nothing was sent.",
            entity=meta.entity, field=field, value=value)


# 256 characters are at most 1024 UTF-8 bytes: such a key fits every limit, nothing to measure
_ALWAYS_FITS = _codec.MAX_SORT_KEY_BYTES // 4


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:40]}...({len(text)} characters)"


def is_instance(value: Any) -> bool:
    """True for an entity instance (by capability: it has ``_state`` and ``attribute_values``)."""
    return not isinstance(value, Mapping) and hasattr(value, "_state") and hasattr(value, "attribute_values")


def primary_key_of(model: type[EntityLike], key: Mapping[str, Any] | EntityLike) -> dict[str, Any]:
    """Return the primary key (DynamoDB JSON) for a key dict of primary-key fields or an instance.

    Raises:
        ValidationError: the dict misses a primary-key field or names an unknown field.
        InvalidKeyValue: a value cannot be put in a key.
    """
    meta = model._meta
    if is_instance(key):
        if not isinstance(key, model):
            raise ValidationError(f"expected a {model.__name__} or a key dict, got a {type(key).__name__}.",
                                  entity=meta.entity)
        return stored_key(key)  # type: ignore[arg-type]
    if not isinstance(key, Mapping):
        raise ValidationError(f"{meta.entity}: a key must be a dict of {', '.join(meta.key_fields)} or an "
                              f"instance, got {key!r}.", entity=meta.entity, value=key)
    unknown = [k for k in key if k not in meta.fields]
    if unknown:
        raise ValidationError(f"{meta.entity} has no field {unknown[0]!r}; its primary key is "
                              f"{', '.join(meta.key_fields)}.", entity=meta.entity, field=unknown[0])
    missing = [k for k in meta.key_fields if key.get(k) is None]
    if missing:
        raise ValidationError(f"{meta.entity}: the key misses {', '.join(missing)} (primary key: "
                              f"{', '.join(meta.key_fields)}).", entity=meta.entity, field=missing[0])
    values = {k: meta.fields[k].validate(v, meta.entity) for k, v in key.items()}
    rendered = meta.primary_key(values)
    check_key_sizes(meta, rendered, values)
    return rendered


def stored_key(obj: EntityLike) -> dict[str, Any]:
    """The primary key (DynamoDB JSON) an instance is stored under: as read or last written,
    else rendered from its fields (a new instance)."""
    meta = obj._meta
    tmeta = meta.table._meta
    model = type(obj)
    values = obj.attribute_values
    stored_pk = values.get(model._dynamo_to_python_attr(tmeta.pk_attribute))
    if stored_pk is not None:
        key = {tmeta.pk_attribute: {"S": stored_pk}}
        if tmeta.sk_attribute:
            key[tmeta.sk_attribute] = {"S": values.get(model._dynamo_to_python_attr(tmeta.sk_attribute))}
        return key
    return meta.primary_key(values)


# -- derived keys: a rewritten index key is built from values the write knows ---------------
# An index key attribute (a GSI's, a template LSI's) is derived client-side from fields. A write
# that sets or removes it must know every field it is built from: each is either written by it,
# or was read and is pinned by a condition on its stored value, so a concurrent change fails the
# write (StaleWrite, nothing written) instead of leaving a key that disagrees with the fields
# stored beside it. A field the write cannot know (never read, deferred) refuses the write
# before any request.

def stored_knowledge(model: type[EntityLike], instance: EntityLike | None,
                     key: Mapping[str, Any] | None = None) -> tuple[dict[str, Any], dict[str, str]]:
    """What a write knows of the stored item: ``(field -> value, unknown field -> why unknown)``.

    An instance read (or written whole) knows every field except those deferred (``only()``,
    an ``F()`` result not returned) and those a blind ``save(update_fields=...)`` did not write;
    an instance never read knows only its primary key; a write by key knows the fields of its
    key dict (values other than the primary key's are the caller's claim, pinned like a read).
    The version field is left out (the version condition handles it).
    """
    meta = model._meta
    keyf = set(meta.key_fields)
    vf = meta.version_field
    unknown: dict[str, str] = {}
    if instance is None:
        given = dict(key or {})
        for n in meta.fields:
            if n not in given and n != vf:
                unknown[n] = "a write by key reads nothing"
        return {n: v for n, v in given.items() if n in meta.fields}, unknown
    state = instance._state
    values = instance.attribute_values
    if state.adding:
        for n in meta.fields:
            if n not in keyf and n != vf:
                unknown[n] = "this instance was never read from the table"
    elif state.partial and state.deferred is None:
        for n in meta.fields:
            if n not in keyf and n != vf:
                unknown[n] = "only() did not read it"
    else:
        if state.deferred is not None:
            why = "only() deferred it" if state.partial else "an F() expression changed it and its result was not read"
            for n in state.deferred[0]:
                if n not in values:  # a deferred field assigned since is pinned at the assigned value
                    unknown[n] = why
        for n in state.unread:
            unknown.setdefault(n, "this instance wrote other fields without reading the item")
    known = {n: values.get(n) for n in meta.fields if n not in unknown and n != vf}
    return known, unknown


def pin_key_sources(model: type[EntityLike], b: ExpressionBuilder, written: Iterable[str], known: Mapping[str, Any],
                    unknown: Mapping[str, str], read_as: Mapping[str, tuple[Any, Any]] | None = None,
                    ) -> tuple[list[str], dict[str, Any], dict[str, Any]]:
    """Plan the conditions that pin the fields a rewritten index key is built from but this write does not write.

    For every index whose key attributes are rewritten from templates (a written field is one
    of its template fields), every other non-key source field must be known: it is pinned at its
    value (``#f = :v``, ``attribute_not_exists(#f)`` for ``None``; a value equal to the field's
    default also matches an absent attribute, which reads as that default). The sources are
    :attr:`Options.key_sources`: the index's template fields and, for an attribute it shares
    with other indexes (one ``Data`` sorting GSI1 and GSI2), theirs too, because whether the
    attribute stays when this index loses a value depends on whether another writer of it has
    every value.

    A field that still holds the value read is pinned at the attribute as it was stored
    (``read_as``, from ``obj._state.read_as``): ``attribute_not_exists`` when it was absent, whatever
    the default read in its place, and the stored text itself when another writer stored the value
    in another form (``2024-05-01T12:00:00Z``); re-serialising the value would make a pin that can
    never hold, so the "safe to retry" ``StaleWrite`` would fail forever.

    Args:
        model: the entity class; b: the request's expression builder; written: the fields the
            write sets or removes; known, unknown: from :func:`stored_knowledge`; read_as: the
            instance's ``_state.read_as`` (``None`` for a write by key).

    Returns:
        (conditions, ``{field: value pinned}``, ``{field: attribute pinned}`` for the fields pinned as stored).

    Raises:
        ValidationError: a source field is unknown (naming entity, field, index, key attributes
            and the remedy); nothing is sent.
    """
    meta = model._meta
    written = set(written)
    keyf = set(meta.key_fields)
    tmeta = meta.table._meta
    conditions: list[str] = []
    pins: dict[str, Any] = {}
    pinned_as: dict[str, Any] = {}
    for bound in meta.indexes.values():
        if not bound.writes_key_attributes:
            continue
        touched = [n for n in bound.fields if n not in keyf and n in written]
        if not touched:
            continue
        sources = [n for n in meta.key_sources[bound.name] if n not in keyf]
        missing = [n for n in sources if n not in written and n in unknown]
        if missing:
            attrs = ", ".join(a for a in bound.key_attrs if a != tmeta.sk_attribute and a != tmeta.pk_attribute)
            raise ValidationError(
                f"{meta.entity}: writing {', '.join(touched)} rewrites index {bound.name} ({bound.index_name}: "
                f"{attrs}), whose key also needs {', '.join(missing)}{_shared_with(meta, bound, missing[0])}, and "
                f"this write does not know the stored value ({unknown[missing[0]]}); nothing was sent. To change "
                "it, read the item first (get(), or refresh_from_db() on this instance) and write from the "
                f"instance read, or write {', '.join(missing)} too (update(...) / update_fields=[...]).",
                entity=meta.entity, field=missing[0], value=None)
        for n in sources:
            if n in written or n in pins:
                continue
            pins[n] = known.get(n)
            as_read = (read_as or {}).get(n)
            if as_read is not None and _same(as_read[0], pins[n]):
                pinned_as[n] = as_read[1]
                path = b.name(meta.fields[n].attr_name)
                conditions.append(f"attribute_not_exists({path})" if as_read[1] is None
                                  else f"{path} = {b.value(as_read[1])}")
            else:
                conditions.append(_pin_condition(b, meta, n, pins[n]))
    return conditions, pins, pinned_as


def _same(read: Any, value: Any) -> bool:
    """The value read is still the value held (``1 == True`` and ``1 == 1.0`` are not the same value here)."""
    return type(read) is type(value) and read == value


def _shared_with(meta: Any, bound: Any, name: str) -> str:
    """`` (index X also writes Data, and whether it stays depends on it)`` when ``name`` is not one of
    ``bound``'s own fields but a field of another index sharing a key attribute with it."""
    if name in bound.fields:
        return ""
    for attr, writers in meta.shared_key_attributes.items():
        if bound in writers:
            other = next((w for w in writers if w is not bound and name in w.fields), None)
            if other is not None:
                return (f" (index {other.name} also writes {attr}, which stays while {other.name} has every "
                        "value of its key)")
    return ""


def _pin_condition(b: ExpressionBuilder, meta: Any, name: str, value: Any) -> str:
    f = meta.fields[name]
    path = b.name(f.attr_name)
    raw = f.serialize(value) if value is not None else None
    if raw is None:
        return f"attribute_not_exists({path})"
    match = f"{path} = {b.value({f.attr_type: raw})}"
    default = getattr(f, "default", None)
    if default is not None and not callable(default) and default == value:
        return f"{match} OR attribute_not_exists({path})"  # stored without it: read as the default
    return match


def _pins_broken(op: WriteOp, raw: Mapping[str, Any]) -> list[tuple[str, Any, Any]]:
    """(field, value pinned, value stored) of each pinned field the stored item no longer matches."""
    if not op.pins:
        return []
    item, _ = decode_written(op.model, raw)
    out = []
    for name, value in op.pins.items():
        stored = item.attribute_values.get(name) if item is not None else None
        attr = op.model._meta.fields[name].attr_name
        if stored != value or (name in op.pinned_as and raw.get(attr) != op.pinned_as[name]):
            out.append((name, value, stored))
    return out


# -- Put / save ----------------------------------------------------------------------------
def _item_values(meta: Options, values: Mapping[str, Any], names: Iterable[str]) -> tuple[dict[str, Any], list[str]]:
    """Serialize ``names`` of ``values``: (attribute -> DynamoDB JSON, attributes to remove)."""
    item: dict[str, Any] = {}
    absent: list[str] = []
    fields = meta.fields
    for name in names:
        f = fields[name]
        value = values.get(name)
        raw = f.serialize(value) if value is not None else None
        if raw is None:
            absent.append(f.attr_name)
        else:
            item[f.attr_name] = {f.attr_type: raw}
    return item, absent


def prepare_put(obj: EntityLike, *, create: bool = False, update_fields: Iterable[str] | None = None,
                fresh: bool = False) -> WriteOp:
    """Plan the write of a whole instance (``save()``/``create()``), or of ``update_fields`` only.

    * ``create`` (and a versioned instance never written): PutItem conditional on
      ``attribute_not_exists(PK)``: no item exists, so nothing can be lost.
    * otherwise an UpdateItem that SETs every declared field (REMOVE for ``None``) and
      key attribute: attributes the model does not declare (another service's, a newer
      app version's) are kept. Versioned: conditional on the version read.
    * ``update_fields``: the same UpdateItem restricted to those fields (plus the index keys
      built from them, ``auto_now`` fields and the version), conditional on the item existing.
    * every UpdateItem is conditional on the stored item being of this entity type (``#type =
      :type``: an instance read must still be stored; a new instance's upsert also when no item is
      there), so an item of another entity type under the same key is never changed.

    Args:
        obj: the instance (not changed here).
        create: refuse to overwrite (``create()``).
        update_fields: field names to write.
        fresh: write a new item at version 1 whatever the instance's version (``bulk_create``).

    Raises:
        ValidationError, InvalidKeyValue: bad field values, unknown ``update_fields``.
        KeyChangeError: a primary-key field changed since the item was read.
    """
    meta = obj._meta
    tmeta = meta.table._meta
    state = obj._state
    entity = meta.entity
    if state.deferred is not None and not (state.partial and update_fields is None):
        # a deferred field (only(), or an F() result not returned) is unknown, never written as None
        wanted = meta.fields if update_fields is None else [n for n in update_fields if n in meta.fields]
        missing = [n for n in wanted if n in state.deferred[0] and n not in obj.attribute_values]
        if missing:
            raise ValidationError(
                f"{entity} {_keytext(obj)}: {', '.join(missing)} {'is' if len(missing) == 1 else 'are'} deferred (not "
                "read by only(), or changed by an F() expression whose result did not come back, as in a "
                "transaction), so saving would write a value this instance never saw; load "
                f"{'it' if len(missing) == 1 else 'them'} first (obj.refresh_from_db(), or read the field: save() "
                "does that itself). Nothing was sent.", entity=entity, field=missing[0])
    if state.partial and update_fields is not None:
        # read with only(): fields not read are unknown, not None, so plan it as update() does
        # (an index key needing a field that was not read is refused, never removed)
        names = list(dict.fromkeys(update_fields))
        unknown = [n for n in names if n not in meta.fields]
        if unknown or not names:
            raise ValidationError(f"{entity}.save(update_fields=...) needs field names of {entity}; got "
                                  f"{', '.join(map(repr, unknown)) or 'none'}.", entity=entity,
                                  field=unknown[0] if unknown else None)
        values = obj.attribute_values
        op = prepare_update(type(obj), instance=obj, changes={n: values.get(n) for n in names})
        op.verb = "save"
        return op
    if state.partial:
        raise ValidationError(
            f"{entity} {obj.key} was read with only()/values(), so saving it would drop the fields not "
            "read; read it fully (get()) before save(), or use save(update_fields=[...]) or update().",
            entity=entity)
    obj.full_clean()
    values = obj.attribute_values
    auto = {name: _dt.datetime.now(_dt.timezone.utc) for name, f in meta.fields.items()
            if getattr(f, "auto_now", False)}
    if auto:
        values = {**values, **auto}
    keys = meta.key_attributes(values)
    check_key_sizes(meta, keys, values)
    model = type(obj)
    key = {tmeta.pk_attribute: {"S": keys[tmeta.pk_attribute]}}
    if tmeta.sk_attribute:
        key[tmeta.sk_attribute] = {"S": keys[tmeta.sk_attribute]}
    fallback = state.fallback  # read under an older key version (read_versions)
    if not state.adding and not create and not fallback:
        old = stored_key(obj)
        if old != key:
            raise KeyChangeError(
                f"{entity}: primary-key field(s) {', '.join(meta.key_fields)} changed (key "
                f"{tuple(v['S'] for v in old.values())} -> {tuple(v['S'] for v in key.values())}); keys are "
                "immutable. Create a new item and delete the old one instead.")
    vf = meta.version_field
    vattr = meta.fields[vf].attr_name if vf else None
    current = None if fresh or not vf else values.get(vf)
    # an item read without a version attribute (written before the model had fields.Version(),
    # or by another writer) is at version 0: saved on condition attribute_not_exists(version)
    unversioned_read = bool(vf) and current is None and not state.adding and not fresh and not create
    # save(update_fields) of an instance never read: the stored version is incremented, never reset
    blind = bool(vf) and current is None and state.adding and update_fields is not None
    new_version = None if blind else (current or 0) + 1 if vf else None
    token = new_token()
    key_values = {model._dynamo_to_python_attr(a): t for a, t in keys.items()}
    verb = "create" if create else "save"
    description = f"{verb} {entity} {', '.join(f'{k}={values.get(k)!r}' for k in meta.key_fields)}"
    b = ExpressionBuilder()
    conditions: list[str] = []

    if update_fields is None and (create or (vf and current is None and not unversioned_read)):
        # PutItem of a new item: nothing stored can be lost
        item = {tmeta.type_attribute: {"S": meta.entity_type}}
        for attr, text in keys.items():
            if text is not None:
                item[attr] = {"S": text}
        fields_av, _ = _item_values(meta, values, (n for n in meta.fields if n != vf))
        item.update(fields_av)
        if vattr:
            item[vattr] = {"N": str(new_version)}
        item[tmeta.revision_attribute] = {"S": token}
        _check_size(meta, obj, item)
        conditions.append(f"attribute_not_exists({b.name(tmeta.pk_attribute)})")
        params: dict[str, Any] = {"TableName": meta.table.table_name(), "Item": item}
        _finish(params, b, conditions, meta.entity)
        return WriteOp("Put", model, params, key, description, instance=obj, verb=verb,
                       expected_version=current, new_version=new_version,
                       local_changes=auto, key_values=key_values, token=token, unread_after=frozenset())

    # UpdateItem: SET what the model declares, keep what it does not
    if update_fields is not None:
        names = list(dict.fromkeys(update_fields))
        unknown = [n for n in names if n not in meta.fields]
        if unknown or not names:
            raise ValidationError(
                f"{entity}.save(update_fields=...) needs field names of {entity}; "
                f"{'unknown: ' + ', '.join(map(repr, unknown)) if unknown else 'none given'} "
                f"(fields: {', '.join(meta.fields)}).", entity=entity, field=unknown[0] if unknown else None)
        names += [n for n in auto if n not in names]
        names = [n for n in names if n != vf]
        touched = set(names)
        # the index keys rewritten are built from fields written or pinned at their stored values
        known, not_known = stored_knowledge(model, obj)
        pin_conditions, pins, pinned_as = pin_key_sources(model, b, touched, known, not_known, state.read_as)
        unread_after = _unread_after(obj, touched)
        index_attrs: dict[str, str | None] = {}
        for bound in meta.indexes.values():
            if bound.writes_key_attributes and touched & set(bound.fields):
                index_attrs.update(meta.index_key(bound, values, keys[tmeta.pk_attribute] or ""))
        conditions.append(_type_condition(b, meta))  # the item exists, and is this entity's
        local = {n: values.get(n) for n in auto}
        upsert = False
    else:
        names = [n for n in meta.fields if n != vf]
        # an instance read from the table: never re-create an item deleted or moved (a move-mode
        # migration) since it was read, at a key nothing reads any more; a new instance's save()
        # is an upsert. Either way never over an item of another entity type
        upsert = state.adding and current is None
        conditions.append(_type_condition(b, meta, or_absent=upsert or bool(fallback)))
        own = {a for bound in meta.indexes.values() if bound.writes_key_attributes
               for a, _ in meta.index_key(bound, {}, "")}
        index_attrs = {a: t for a, t in keys.items() if a in own}
        local = dict(auto)
        pin_conditions, pins, pinned_as, unread_after = [], {}, {}, frozenset()  # every field is written
    item, absent = _item_values(meta, values, names)
    if update_fields is not None:
        check_lsi_values(meta, item, values)
    sets: list[str] = []
    removes: list[str] = [b.name(a) for a in absent]
    if update_fields is None:
        sets.append(f"{b.name(tmeta.type_attribute)} = {b.value({'S': meta.entity_type})}")
    for attr, text in index_attrs.items():
        if text is None:
            removes.append(b.name(attr))
        else:
            item[attr] = {"S": text}
    for attr, av in item.items():
        sets.append(f"{b.name(attr)} = {b.value(av)}")
    if vattr:
        vpath = b.name(vattr)
        if blind:
            sets.append(f"{vpath} = if_not_exists({vpath}, {b.value({'N': '0'})}) + {b.value({'N': '1'})}")
        else:
            sets.append(f"{vpath} = {b.value({'N': str(new_version)})}")
        if unversioned_read:
            conditions.append(f"attribute_not_exists({vpath})")
        elif current is not None:
            match = f"{vpath} = {b.value({'N': str(current)})}"
            conditions.append(f"attribute_not_exists({b.name(tmeta.pk_attribute)}) OR {match}" if fallback else match)
    conditions += pin_conditions
    sets.append(f"{b.name(tmeta.revision_attribute)} = {b.value({'S': token})}")
    if update_fields is None:
        # the item as stored: the key, type and revision attributes count too (as in create)
        _check_size(meta, obj, {**item, **key, tmeta.type_attribute: {"S": meta.entity_type},
                                tmeta.revision_attribute: {"S": token}})
    else:
        check_index_attributes(meta, item)
    expression = "SET " + ", ".join(sets)
    if removes:
        expression += " REMOVE " + ", ".join(removes)
    params = {"TableName": meta.table.table_name(), "Key": key, "UpdateExpression": expression}
    _finish(params, b, conditions, meta.entity)
    if update_fields is not None:
        key_values = {model._dynamo_to_python_attr(a): t for a, t in index_attrs.items()}
    return WriteOp("Update", model, params, key, description, instance=obj, verb=verb,
                   expected_version=0 if unversioned_read else current, new_version=new_version,
                   local_changes=local, key_values=key_values, token=token, pins=pins, pinned_as=pinned_as,
                   unread_after=unread_after, may_create=upsert)


def check_lsi_values(meta: Options, item: Mapping[str, Any], values: Mapping[str, Any]) -> None:
    """Refuse an LSI sort-key value DynamoDB would refuse: empty, or over 1024 bytes.

    An LSI's sort key is a field's own attribute (not rendered from a template), so the checks
    the key renderer makes for table and GSI keys are made here, on every write path.

    Args:
        meta: the entity's ``Options``; item: attribute -> DynamoDB JSON about to be written;
            values: field name -> value, to name field and value.

    Raises:
        InvalidKeyValue: naming entity, field and value, before any request.
    """
    lsis = meta.table._meta.lsis
    if not lsis:
        return
    attrs = {a: name for name, a in lsis.items() if a in item}
    for attr, index in attrs.items():
        av = item[attr]
        if av.get("S") == "" or av.get("B") in (b"", ""):
            field = next((n for n, f in meta.fields.items() if f.attr_name == attr), attr)
            raise InvalidKeyValue(
                f"{meta.entity}.{field}='': attribute {attr} is the sort key of index {index}, and DynamoDB refuses an "
                "empty string in an index key attribute; give a non-empty value, or None to leave the item out of "
                "the index. Nothing was sent.", entity=meta.entity, field=field, value="")
    check_key_sizes(meta, {a: item[a] for a in attrs}, values)


def check_index_attributes(meta: Any, item: Mapping[str, Any]) -> None:
    """Refuse values DynamoDB refuses in a multi-attribute GSI's key attributes, before any request.

    Such an index's keys are the fields' own attributes: an empty string or binary there, or
    one over the key-size limit, makes DynamoDB refuse the whole write.

    Args:
        meta: the entity's options; item: attribute name -> DynamoDB attribute value to be written.

    Raises:
        InvalidKeyValue: naming the entity, the field, the index and the value.
    """
    for gname, multi in meta.table._meta.multi_gsis.items():
        # a multi-attribute GSI's keys are the fields' own attributes: DynamoDB refuses the whole
        # write for an empty string or binary there, or one over the key-size limit
        for role, pairs in (("partition", multi.pk), ("sort", multi.sk)):
            for attr, _typ in pairs:
                av = item.get(attr)
                if not isinstance(av, dict) or not ({"S", "B"} & set(av)):
                    continue
                raw = av.get("S", av.get("B"))
                fname = next((n for n, f in meta.fields.items() if f.attr_name == attr), attr)
                if raw in ("", b""):
                    raise InvalidKeyValue(
                        f"{meta.entity}.{fname}='': {attr} is a {role} key attribute of GSI {gname}, and DynamoDB "
                        "refuses an empty value there; store None instead (the item is then left out of the "
                        "index). Nothing was sent.", entity=meta.entity, field=fname, value=raw)
                if isinstance(raw, (str, bytes)):
                    problem = _codec.key_size_problem(raw, role == "partition")
                    if problem is not None:
                        raise InvalidKeyValue(
                            f"{meta.entity}.{fname}={_short(raw)}: {attr} is a {role} key attribute of GSI {gname} "
                            f"and would be {problem}. Nothing was sent.", entity=meta.entity, field=fname, value=raw)
            _check_aggregate_key_size(meta, gname, role, [a for a, _ in pairs], item)


def _check_aggregate_key_size(meta: Any, gname: str, role: str, attrs: list[str], item: Mapping[str, Any]) -> None:
    """Refuse key attributes of one role of a multi-attribute GSI whose sizes add up past DynamoDB's limit.

    DynamoDB limits the sum of the HASH attributes to 2048 bytes and of the RANGE attributes to
    1024 bytes (strings in UTF-8, binaries as bytes, numbers 1 byte per two significant digits
    plus 1), whatever each one's own size.
    """
    present = [(a, item[a]) for a in attrs if isinstance(item.get(a), dict) and {"S", "N", "B"} & set(item[a])]
    if len(present) < 2:
        return
    sizes = [(a, _codec.av_size(av)) for a, av in present]
    total = sum(size for _, size in sizes)
    limit = _codec.MAX_PARTITION_KEY_BYTES if role == "partition" else _codec.MAX_SORT_KEY_BYTES
    if total <= limit:
        return
    names = {f.attr_name: n for n, f in meta.fields.items()}
    fname, biggest = max(sizes, key=lambda pair: pair[1])
    field = names.get(fname, fname)
    value = next(iter(dict(present)[fname].values()))
    described = ", ".join(f"{names.get(a, a)} ({size} bytes)" for a, size in sizes)
    raise InvalidKeyValue(
        f"{meta.entity}: the {role} key attributes of GSI {gname} would be {total} bytes together: {described}, over "
        f"DynamoDB's {limit}-byte limit for the sum of an index's {role} key attributes; shorten {field} (or another). "
        "Nothing was sent.", entity=meta.entity, field=field, value=value)


def _check_size(meta: Options, obj: EntityLike, item: Mapping[str, Any]) -> None:
    check_lsi_values(meta, item, obj.attribute_values)
    check_index_attributes(meta, item)
    size = _codec.item_size(item)
    if size > _codec.MAX_ITEM_BYTES:
        biggest = max(item, key=lambda a: _codec.av_size(item[a]))
        raise ValidationError(
            f"{meta.entity} {_keytext(obj)} is {size / 1024:.0f} KB, over DynamoDB's 400 KB item limit "
            f"(largest attribute: {biggest}, {_codec.av_size(item[biggest]) / 1024:.0f} KB); store large values "
            "elsewhere (S3) and keep a reference.", entity=meta.entity, field=biggest)


def _keytext(obj: EntityLike) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in obj.key.items())


# -- Delete ------------------------------------------------------------------------------
def prepare_delete(model: type[EntityLike], target: EntityLike | Mapping[str, Any], *,
                   condition: Q | None = None) -> WriteOp:
    """Plan a DeleteItem; an instance of a versioned entity is deleted only if unchanged.

    Conditional on the stored item being of ``model``'s entity type (an item of another type under
    the key is left alone, the op's error is ``DoesNotExist``); deleting no item stays a no-op,
    except for a versioned instance, whose version read says the item is there.

    Args:
        model: the entity class; target: an instance or a key dict of primary-key fields;
            condition: an extra ``Q`` that must hold on the stored item.

    Raises:
        ValidationError, InvalidKeyValue: a bad key.
    """
    meta = model._meta
    key = primary_key_of(model, target)
    b = ExpressionBuilder()
    conditions = []
    version = None
    instance: Any = target if is_instance(target) else None
    vf = meta.version_field
    if instance is not None and vf:
        version = getattr(instance, vf)
        if version is not None:
            conditions.append(f"{b.name(meta.fields[vf].attr_name)} = {b.value({'N': str(version)})}")
    # an item of another entity type under this key is not this entity's to delete; deleting
    # nothing stays a no-op, unless the version read says the item must be there
    conditions.insert(0, _type_condition(b, meta, or_absent=version is None))
    if condition is not None:
        conditions.append(b.condition(condition, meta))
    params: dict[str, Any] = {"TableName": meta.table.table_name(), "Key": key}
    _finish(params, b, conditions, meta.entity)
    return WriteOp("Delete", model, params, key, f"delete {meta.entity} {_entity_keydesc(model, target)}",
                   instance=instance, verb="delete", expected_version=version)


def older_keys(model: type[EntityLike], target: EntityLike | Mapping[str, Any],
               current: dict[str, Any] | None = None) -> list[tuple[str, dict[str, Any]]]:
    """``(version, key)`` of the item's keys at each older key version ``Meta.read_versions`` lists,
    in that order (DynamoDB JSON; keys equal to the current one or to an earlier entry left out).

    ``current`` is the current key when the caller has planned it (default: the instance's
    stored key, or the key rendered from the key dict).

    Raises:
        InvalidKeyValue: a key field is missing or cannot be put in a key.
    """
    meta = model._meta
    older = [v for v in meta.read_versions if v != meta.key_version]
    if not older:
        return []
    values: Mapping[str, Any] = target.attribute_values if is_instance(target) else target  # type: ignore[union-attr, assignment]
    seen = [current if current is not None else primary_key_of(model, target)]
    out = []
    for version in older:
        key = meta.primary_key(values, version)
        if key not in seen:
            seen.append(key)
            out.append((version, key))
    return out


def prepare_delete_older(model: type[EntityLike], target: EntityLike | Mapping[str, Any]) -> list[WriteOp]:
    """Plan Deletes of the item's keys at the older key versions ``Meta.read_versions`` lists
    (:func:`older_keys`), sent with the item's own Delete in one TransactWriteItems: a copy left
    there (a copy-mode rekey, an application still on that version) would otherwise be found by
    ``get()``'s fallback and the deleted item would come back. Empty without older versions.

    Each is conditional on no item, or an item of this entity type, being there: an item of another
    entity type whose templates render the same older key (a subclass not bumped with it) is not
    this entity's, and the whole delete fails naming both types instead of deleting it.

    Raises:
        InvalidKeyValue: a key field is missing or cannot be put in a key.
    """
    meta = model._meta
    tmeta = meta.table._meta
    desc = _entity_keydesc(model, target)
    names = {"#k": tmeta.pk_attribute, "#t": tmeta.type_attribute}
    return [WriteOp("Delete", model, {"TableName": meta.table.table_name(), "Key": key,
                                      "ConditionExpression": "attribute_not_exists(#k) OR #t = :t",
                                      "ExpressionAttributeNames": names,
                                      "ExpressionAttributeValues": {":t": {"S": meta.entity_type}}}, key,
                    f"delete {meta.entity} {desc} at key version {version}", verb="delete")
            for version, key in older_keys(model, target)]


def prepare_create_checks(put: WriteOp) -> list[WriteOp]:
    """Plan the ``ConditionCheck`` ``attribute_not_exists`` that a creating Put needs during a key-version rollout.

    While ``Meta.read_versions`` lists older key versions, ``get()`` finds an item stored only
    under an older key: a new item under the current key would hide it from every read (and a
    later copy-mode rekey would stall on it). One check per older key (:func:`older_keys`), sent
    with the Put in one TransactWriteItems; each is billed like a transactional write of a 1 KB
    item (2 WCU). Empty without older versions, or for a write that may overwrite.

    Args:
        put: a planned Put that refuses to overwrite (``put.refuses_overwrite``: ``create()``, a new
            versioned instance); for any other op the result is empty.

    Returns:
        one ConditionCheck op per older key, in ``read_versions`` order; its ``older_version``
        names the version, and a failed check maps to :class:`AlreadyExists` saying so.

    Raises:
        InvalidKeyValue: a key field cannot be put in an older version's key.
    """
    if not put.refuses_overwrite:
        return []
    return prepare_older_checks(put)


def prepare_older_checks(op: WriteOp) -> list[WriteOp]:
    """Plan a ``ConditionCheck`` ``attribute_not_exists`` on each older-version key of ``op``'s
    instance (:func:`older_keys`), whatever the op: :func:`prepare_create_checks` without its
    gate (the upsert of a new unversioned instance is checked the same way, then moved).

    Returns:
        the checks (each ``older_version`` set), empty without an instance or older versions.
    """
    put = op
    if put.instance is None:
        return []
    model = put.model
    pk_attr = model._meta.table._meta.pk_attribute
    # an item of another entity type there is not this entity's (get() does not return it): no clash
    type_attr = model._meta.table._meta.type_attribute
    return [WriteOp("ConditionCheck", model,
                    {"TableName": put.params["TableName"], "Key": key,
                     "ConditionExpression": "attribute_not_exists(#k) OR #t <> :t",
                     "ExpressionAttributeNames": {"#k": pk_attr, "#t": type_attr},
                     "ExpressionAttributeValues": {":t": {"S": model._meta.entity_type}}},
                    key, put.description, verb=put.verb, older_version=version)
            for version, key in older_keys(model, put.instance, put.key)]


def _entity_keydesc(model: type[EntityLike], target: EntityLike | Mapping[str, Any]) -> str:
    key = target.key if not isinstance(target, Mapping) else target
    return ", ".join(f"{k}={v!r}" for k, v in key.items() if k in model._meta.key_fields)


# -- ConditionCheck ----------------------------------------------------------------------
def prepare_check(model: type[EntityLike], target: EntityLike | Mapping[str, Any], condition: Q) -> WriteOp:
    """Plan a ConditionCheck on another item (transactions only: one action of TransactWriteItems).

    The check holds when ``condition`` holds on the item stored under the key, which must be of
    ``model``'s entity type or absent (a condition such as ``Q(name__exists=False)`` holds on no
    item); an item of another entity type there fails it.

    Args:
        model: the entity class; target: an instance or a key dict of primary-key fields;
            condition: the ``Q`` that must hold.

    Raises:
        ValidationError, InvalidKeyValue: a bad key or an empty condition (before any request).
    """
    meta = model._meta
    key = primary_key_of(model, target)
    b = ExpressionBuilder()
    params: dict[str, Any] = {"TableName": meta.table.table_name(), "Key": key}
    user = b.condition(condition, meta)
    if not user:
        raise ValidationError(f"{meta.entity}: check() needs a condition.", entity=meta.entity)
    # the condition is about this entity's item, or its absence (Q(name__exists=False) holds on no
    # item): an item of another entity type under this key fails the check
    _finish(params, b, [_type_condition(b, meta, or_absent=True), user], meta.entity)
    return WriteOp("ConditionCheck", model, params, key, f"check {meta.entity} {_entity_keydesc(model, target)}",
                   verb="check")


# -- Update ------------------------------------------------------------------------------
def _value_av(meta: Any, name: str, value: Any) -> dict[str, Any]:
    return serialize_value(meta, name, value, purpose="stored")


def _idempotent(expr: F) -> bool:
    """False for an expression whose second application changes the item again (+, -, append)."""
    return not any(op in ("+", "-", "append") for op, _ in expr.ops)


def _operand(b: ExpressionBuilder, meta: Any, target: str, expr: F) -> tuple[str, str | None]:
    """Render an F expression; return (SET operand, or None) and an ADD/DELETE clause."""
    source = field_of(meta, expr.name)
    path = b.name(source.attr_name)
    ops = list(expr.ops)
    if ops and ops[0][0] in ("add", "discard"):
        if len(ops) != 1 or expr.name != target:
            raise ValidationError(f"{meta.entity}.{target}: set add/discard must be F({target!r}).add(...) alone.",
                                  entity=meta.entity, field=target)
        if not meta.fields[target].is_set:
            raise ValidationError(f"{meta.entity}.{target} is not a fields.Set; add()/discard() work on sets.",
                                  entity=meta.entity, field=target)
        av = _value_av(meta, target, set(ops[0][1]))
        return "", f"{'ADD' if ops[0][0] == 'add' else 'DELETE'} {path} {b.value(av)}"
    text = path
    arithmetic = 0
    for i, (op, value) in enumerate(ops):
        if op == "if_not_exists":
            if i != 0:
                raise ValidationError(f"{meta.entity}.{target}: if_not_exists() must come first in the expression.",
                                      entity=meta.entity, field=target)
            text = f"if_not_exists({path}, {b.value(_value_av(meta, expr.name, value))})"
        elif op in ("+", "-"):
            arithmetic += 1
            if arithmetic > 1:
                raise ValidationError(f"{meta.entity}.{target}: DynamoDB allows one + or - per update.",
                                      entity=meta.entity, field=target, value=expr)
            if isinstance(value, bool) or not isinstance(value, (int, float)) and type(value).__name__ != "Decimal":
                raise ValidationError(f"{meta.entity}.{target}: {op} needs a number, got {value!r}.",
                                      entity=meta.entity, field=target, value=value)
            text = f"{text} {op} {b.value(plain_value(meta, target, value, op))}"
        elif op == "append":
            if not meta.fields[target].is_list:
                raise ValidationError(f"{meta.entity}.{target} is not a fields.List; append() works on lists.",
                                      entity=meta.entity, field=target)
            text = f"list_append({text}, {b.value(plain_value(meta, target, list(value), 'append()'))})"
    return text, None


def prepare_update(model: type[EntityLike], *, instance: EntityLike | None = None,
                   key: Mapping[str, Any] | None = None, changes: Mapping[str, Any],
                   condition: Q | None = None) -> WriteOp:
    """Plan one UpdateItem (ReturnValues ALL_NEW) for ``changes``.

    Args:
        model: the entity class.
        instance: the instance read (its version is checked), or ``None``.
        key: primary-key fields when there is no instance.
        changes: field -> plain value, ``None`` (REMOVE), or an :class:`F` expression.
        condition: an extra condition on the stored item.

    The update is conditional on the item existing with ``model``'s entity type (an item of
    another entity type under the key fails it: ``DoesNotExist``), on the version read (versioned
    instance), on the pinned fields of rewritten index keys, and on ``condition``.

    Raises:
        ValidationError: unknown field, wrong type, a required field set to None, an
            expression on a field an index key is built from, or index fields unknown.
        KeyChangeError: a primary-key field is changed.
    """
    meta = model._meta
    tmeta = meta.table._meta
    entity = meta.entity
    if not changes:
        raise ValidationError(f"{entity}.update() needs at least one field to change.", entity=entity)
    for name, value in changes.items():
        if name not in meta.fields:
            raise ValidationError(f"{entity} has no field {name!r}; fields: {', '.join(meta.fields)}.",
                                  entity=entity, field=name, value=value)
        if name in meta.key_fields:
            raise KeyChangeError(f"{entity}.{name} is part of the primary key; keys are immutable. Create a new "
                                 "item and delete the old one instead.")
        if name == meta.version_field:
            raise ValidationError(f"{entity}.{name} is the version field; dynorm increments it itself.",
                                  entity=entity, field=name)
    target_key = primary_key_of(model, instance if instance is not None else (key or {}))
    b = ExpressionBuilder()
    sets: list[str] = []
    removes: list[str] = []
    adds: list[str] = []
    plain: dict[str, Any] = {}
    for name, value in changes.items():
        f = meta.fields[name]
        path = b.name(f.attr_name)
        if isinstance(value, F):
            text, clause = _operand(b, meta, name, value)
            if clause:
                adds.append(clause)
            else:
                sets.append(f"{path} = {text}")
        elif value is None:
            if not f.null:
                raise ValidationError(f"{entity}.{name} is required and cannot be removed (set to None).",
                                      entity=entity, field=name)
            removes.append(path)
            plain[name] = None
        else:
            av = _value_av(meta, name, value)
            check_index_attributes(meta, {f.attr_name: av})
            plain[name] = f.validate(value, entity)
            check_lsi_values(meta, {f.attr_name: av}, plain)
            sets.append(f"{path} = {b.value(av)}")
    now = _dt.datetime.now(_dt.timezone.utc)
    for name, f in meta.fields.items():
        if getattr(f, "auto_now", False) and name not in changes:
            sets.append(f"{b.name(f.attr_name)} = {b.value({'S': f.serialize(now)})}")
            plain[name] = now
    written = set(changes) | set(plain)

    # Index keys built from changed fields are rewritten in the same request, from values the
    # write knows: the other fields they are built from are pinned at their stored values
    for bound in meta.indexes.values():
        if bound.writes_key_attributes:
            exprs = sorted(n for n in bound.fields if isinstance(changes.get(n), F))
            if exprs:
                raise ValidationError(
                    f"{entity}.{exprs[0]} is part of index {bound.name} ({bound.index_name}); give a plain value, not "
                    "an expression, so the index key can be recomputed in the same request.", entity=entity,
                    field=exprs[0])
    known, unknown = stored_knowledge(model, instance, key)
    if instance is not None:
        known.update(instance.key)
    known.update(plain)
    pin_conditions, pins, pinned_as = pin_key_sources(model, b, written, known, unknown,
                                                      instance._state.read_as if instance is not None else None)
    multi_attrs = {a for multi in meta.table._meta.multi_gsis.values() for a in multi.attributes}
    if multi_attrs:
        # the sum of a multi-attribute GSI's key attributes, with the values the item will hold
        # (those known: the instance read, the key, the changes)
        check_index_attributes(meta, {f.attr_name: _value_av(meta, n, known[n]) for n, f in meta.fields.items()
                                      if f.attr_name in multi_attrs and known.get(n) is not None
                                      and not isinstance(known[n], F)})
    key_values: dict[str, Any] = {}
    index_attrs: dict[str, str | None] = {}  # an attribute shared by two rewritten indexes is sent once
    for bound in meta.indexes.values():
        if not bound.writes_key_attributes:
            continue
        if not (set(bound.fields) - set(meta.key_fields)) & written:
            continue
        index_attrs.update(meta.index_key(bound, known, target_key[tmeta.pk_attribute]["S"]))
    for attr, key_text in index_attrs.items():
        key_values[model._dynamo_to_python_attr(attr)] = key_text
        if key_text is None:
            removes.append(b.name(attr))
        else:
            check_key_sizes(meta, {attr: str(key_text)}, known)
            sets.append(f"{b.name(attr)} = {b.value({'S': key_text})}")

    conditions = [_type_condition(b, meta)]  # the item exists, and is this entity's
    vf = meta.version_field
    expected = new_version = None
    if vf:
        vpath = b.name(meta.fields[vf].attr_name)
        current = getattr(instance, vf) if instance is not None else None
        if current is not None:
            expected, new_version = current, current + 1
            conditions.append(f"{vpath} = {b.value({'N': str(current)})}")
            sets.append(f"{vpath} = {b.value({'N': str(new_version)})}")
        else:
            sets.append(f"{vpath} = if_not_exists({vpath}, {b.value({'N': '0'})}) + {b.value({'N': '1'})}")
    conditions += pin_conditions
    token = new_token()
    rev = b.name(tmeta.revision_attribute)
    tok = b.value({"S": token})
    sets.append(f"{rev} = {tok}")
    once = expected is None and any(isinstance(v, F) and not _idempotent(v) for v in changes.values())
    if expected is None and not once:
        # a retried idempotent request finds its own token stored and fails, and the sender
        # reports the first attempt's result (applying it again would change nothing anyway)
        conditions.append(f"attribute_not_exists({rev}) OR {rev} <> {tok}")
    if condition is not None:
        conditions.append(b.condition(condition, meta))
    clauses = []
    if sets:
        clauses.append("SET " + ", ".join(sets))
    if removes:
        clauses.append("REMOVE " + ", ".join(removes))
    clauses += adds
    params: dict[str, Any] = {"TableName": meta.table.table_name(), "Key": target_key,
                              "UpdateExpression": " ".join(clauses)}
    _finish(params, b, conditions, meta.entity)
    shown = instance.key if instance is not None else {k: v for k, v in (key or {}).items() if k in meta.key_fields}
    return WriteOp("Update", model, params, target_key,
                   f"update {entity} {', '.join(f'{k}={v!r}' for k, v in shown.items())}",
                   instance=instance, verb="update", expected_version=expected, new_version=new_version,
                   local_changes=plain, key_values=key_values, token=token, returns_item=True, once=once,
                   pins=pins, pinned_as=pinned_as,
                   expression_fields=frozenset(n for n, v in changes.items() if isinstance(v, F)),
                   unread_after=_unread_after(instance, written), entity_key=dict(shown), changes=dict(changes))


def _unread_after(instance: EntityLike | None, written: Iterable[str]) -> frozenset[str] | None:
    """The fields an instance still has not read once ``written`` are written (see ``ModelState.unread``)."""
    if instance is None:
        return None
    meta = instance._meta
    state = instance._state
    if state.adding:
        before = {n for n in meta.fields if n not in meta.key_fields and n != meta.version_field}
    else:
        before = set(state.unread)
    return frozenset(before - set(written))


# -- read_versions fallback: moving an item read under an older key version -------------------
def unchanged_condition(revision_attribute: str, raw: Mapping[str, Any],
                        version_attribute: str | None = None) -> tuple[str, dict[str, str], dict[str, Any]]:
    """The condition "this item is as ``raw`` shows it": (expression, names, values).

    Every dynorm write sets the revision attribute to a fresh token, so an item read with a
    token is unchanged exactly when its token is (one attribute compared, whatever a write
    added, changed or removed); the version attribute (``fields.Version``), when the item has
    one, is compared too, for other writers that follow the optimistic-locking convention
    without knowing the token. An item read without a token (written by another writer, or by
    dynorm before it set one) is compared attribute by attribute, and
    ``attribute_not_exists(rev)`` catches any dynorm write since.

    Args:
        revision_attribute: ``Table.Meta.revision_attribute``.
        raw: the item as read (DynamoDB JSON).
        version_attribute: the entity's version attribute name, if any.
    """
    if revision_attribute in raw:
        if version_attribute and version_attribute in raw:
            return ("#r = :r AND #v = :v", {"#r": revision_attribute, "#v": version_attribute},
                    {":r": raw[revision_attribute], ":v": raw[version_attribute]})
        return "#r = :r", {"#r": revision_attribute}, {":r": raw[revision_attribute]}
    names: dict[str, str] = {"#r": revision_attribute}
    values: dict[str, Any] = {}
    parts = ["attribute_not_exists(#r)"]
    for i, (attr, av) in enumerate(sorted(raw.items())):
        names[f"#a{i}"] = attr
        values[f":a{i}"] = av
        parts.append(f"#a{i} = :a{i}")
    return " AND ".join(parts), names, values


def prepare_move_to_current(model: type[EntityLike], raw: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Plan moving an item read under an older key version to the current one (``read_versions``).

    Returns ``(put, delete)``, the two actions of one TransactWriteItems: a Put of the item
    under the current keys, every attribute kept as read (undeclared ones and the revision
    token included), conditional on no item there or one with the same token (a copy-mode
    rekey's copy of it); and a Delete of the old item conditional on it being unchanged
    (:func:`unchanged_condition`).

    Raises:
        InvalidKeyValue: a stored value cannot be put in the current keys.
    """
    meta = model._meta
    tmeta = meta.table._meta
    table = meta.table.table_name()
    rev = tmeta.revision_attribute
    old_key = {tmeta.pk_attribute: raw[tmeta.pk_attribute]}
    if tmeta.sk_attribute:
        old_key[tmeta.sk_attribute] = raw[tmeta.sk_attribute]
    keys = meta.key_attributes(model.from_raw_data(dict(raw)).attribute_values)
    item = {a: v for a, v in raw.items() if a not in keys}
    item.update({a: {"S": t} for a, t in keys.items() if t is not None})
    # ALL_OLD: an item of another entity type under the current keys is told apart from a copy of this one
    put: dict[str, Any] = {"TableName": table, "Item": item, "ExpressionAttributeNames": {"#pk": tmeta.pk_attribute},
                           "ReturnValuesOnConditionCheckFailure": "ALL_OLD"}
    if rev in raw:
        put["ConditionExpression"] = "attribute_not_exists(#pk) OR #r = :r"
        put["ExpressionAttributeNames"]["#r"] = rev
        put["ExpressionAttributeValues"] = {":r": raw[rev]}
    else:
        put["ConditionExpression"] = "attribute_not_exists(#pk)"
    vf = meta.version_field
    cond, names, values = unchanged_condition(rev, raw, meta.fields[vf].attr_name if vf else None)
    delete: dict[str, Any] = {"TableName": table, "Key": old_key, "ConditionExpression": cond,
                              "ExpressionAttributeNames": names}
    if values:
        delete["ExpressionAttributeValues"] = values
    return put, delete
