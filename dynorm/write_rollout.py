"""Planning for key-version rollouts (``Meta.read_versions``): the keys of an item at older versions,
the deletes and checks of those keys, and the move of an item read there to the current keys.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from ._codec import item_size
from .table_options import copied_from_attribute, copied_from_value
from .write_keys import entity_key_text, is_instance, primary_key_of
from .write_op import WriteOp

if TYPE_CHECKING:  # pragma: no cover
    from ._protocols import EntityLike

#: DynamoDB's item size limit: a moved item records the revision it was copied from while it fits
MAX_ITEM_BYTES = 400 * 1024

__all__ = ["older_keys", "prepare_delete_older", "prepare_create_checks", "prepare_older_checks",
           "unchanged_condition", "prepare_move_to_current"]


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
    desc = entity_key_text(model, target)
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
    token included) plus the revision it was copied from (``_dynorm_rev_src``, as a rekey
    records it, while the item fits DynamoDB's 400 KB), conditional on no item there or one with
    the same token (a copy-mode rekey's copy of it); and a Delete of the old item conditional on it being unchanged
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
    if rev in raw:
        # the revision it was copied from, as a rekey records it (``_dynorm_rev_src``): the stream reads
        # the Put's INSERT as a move also without the Delete's REMOVE (docs/streams.md)
        marked = {**item, copied_from_attribute(rev): copied_from_value(raw, rev, raw[rev]["S"])}
        if item_size(marked) <= MAX_ITEM_BYTES:
            item = marked
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
