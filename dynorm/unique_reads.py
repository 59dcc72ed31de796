"""The read a write of a unique field needs first: the stored unique values (one consistent GetItem).

A write that changes a unique field swaps the sentinel of the value stored (:mod:`dynorm.write_unique`).
An instance read whole knows it (``_state.unique_as``); a write by key (``tx.update(Model, key, ...)``,
``qs.delete()``, ``bulk_delete(keys)``) or an instance read with ``only()`` without the field reads it
here, and the write is then conditional on the item still holding it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from . import backend
from .writes import known_stored, primary_key_of

if TYPE_CHECKING:  # pragma: no cover
    from ._protocols import EntityLike

__all__ = ["stored_unique_steps", "know_unique_steps"]


def stored_unique_steps(model: type[EntityLike], target: EntityLike | Mapping[str, Any]) -> backend.Steps:
    """Read the unique fields' stored values of one item: one GetItem (ConsistentRead, projected).

    Returns:
        field -> value of every unique field, or ``None`` when no item of ``model``'s entity type is
        stored under the key.
    """
    meta = model._meta
    tmeta = meta.table._meta
    attrs = [tmeta.type_attribute, *(meta.fields[n].attr_name for n in meta.unique_fields)]
    params = {"TableName": meta.table.table_name(), "Key": primary_key_of(model, target), "ConsistentRead": True,
              "ProjectionExpression": ", ".join(f"#u{i}" for i in range(len(attrs))),
              "ExpressionAttributeNames": {f"#u{i}": a for i, a in enumerate(attrs)},
              "ReturnConsumedCapacity": "TOTAL"}
    resp = yield backend.Send("GetItem", params, entities=(model,))
    raw = resp.get("Item")
    if raw is None or raw.get(tmeta.type_attribute) != {"S": meta.entity_type}:
        return None
    out: dict[str, Any] = {}
    for n in meta.unique_fields:
        f = meta.fields[n]
        av = raw.get(f.attr_name)
        out[n] = f.deserialize(av[f.attr_type]) if av and f.attr_type in av else None  # type: ignore[attr-defined]
    return out


def know_unique_steps(obj: EntityLike) -> backend.Steps:
    """Make sure ``obj`` knows its unique fields' stored values (``_state.unique_as``); one GetItem when not.

    A new instance (``_state.adding``) needs nothing (its save claims its values); an item not found
    counts as holding none (the write then fails as it would: ``DoesNotExist``).
    """
    meta = obj._meta
    if not meta.constraints or obj._state.adding or known_stored(obj) is not None:
        return
    stored = yield from stored_unique_steps(type(obj), obj)
    obj._state.unique_as.update(stored or dict.fromkeys(meta.unique_fields))
