"""Compare the migration state with the live models and plan the operations between them (pure)."""

from __future__ import annotations

import re

from ..keys import VERSION, KeyTemplate
from .operations import (
    AddConstraint,
    AlterKeyEncoding,
    AlterStream,
    CreateEntity,
    CreateTable,
    DeleteEntity,
    DropIndexes,
    MigrationError,
    Operation,
    RekeyEntity,
    RemoveConstraint,
    SyncIndexes,
)
from .state import EntityState, ProjectState

__all__ = ["detect_changes", "suggest_name"]


def detect_changes(old: ProjectState, new: ProjectState) -> list[Operation]:
    """Return the operations that turn ``old`` into ``new``.

    New tables become ``CreateTable``, new GSIs ``SyncIndexes``, GSIs gone from the table
    ``DropIndexes`` (the entities stop writing their keys; no item is rewritten), a changed
    ``Table.Meta.stream`` ``AlterStream``, new entity types
    ``CreateEntity``, changed key versions or templates ``RekeyEntity`` (old and new layouts
    frozen), removed entity types ``DeleteEntity``. Tables are never dropped.

    Raises:
        MigrationError: a change DynamoDB cannot make in place (key attributes, LSIs).
    """
    ops: list[Operation] = []
    old = old.clone()
    for name, table in new.tables.items():
        before = old.tables.get(name)
        if before is None:
            ops.append(CreateTable(**table.definition()))
            continue
        for attr in ("pk_attribute", "sk_attribute", "type_attribute", "delimiter"):
            if getattr(before, attr) != getattr(table, attr):
                raise MigrationError(f"table {name}: changing {attr} from {getattr(before, attr)!r} to "
                                     f"{getattr(table, attr)!r} is not supported in place; declare a new table.")
        if before.key_encoding != table.key_encoding:
            # every stored key changes: each entity type moves to a new key version, so that
            # RekeyEntity can tell old items from new ones and rewrite them
            stay = sorted(e.entity_type for k, e in new.entities.items() if k[0] == name and k in old.entities
                          and old.entities[k].key_version == e.key_version)
            if stay:
                raise MigrationError(
                    f"table {name}: key_encoding changes from {before.key_encoding!r} to {table.key_encoding!r}, "
                    f"which rewrites every key; give {', '.join(stay)} a new Meta.key_version in the same change "
                    f"(or keep key_encoding={before.key_encoding!r}; a table created before dynorm 0.2 declares "
                    "key_encoding='percent' in its Table.Meta and in the CreateTable of its first migration).")
            ops.append(AlterKeyEncoding(name, table.key_encoding))
        if before.lsis != table.lsis:
            raise MigrationError(f"table {name}: LSIs can only be declared when a table is created.")
        now, was = table.all_gsis(), before.all_gsis()
        changed = {g: v for g, v in now.items() if was.get(g) != v}
        bad = [g for g in changed if g in was]
        if bad:
            raise MigrationError(f"table {name}: GSI {bad[0]} changed its key attributes; add a new GSI instead.")
        if changed:
            # DynamoDB backfills a new GSI by itself: a multi-attribute GSI on attributes the
            # items hold already needs no item rewrite (entities moving onto it keep their layout)
            ops.append(SyncIndexes(name, changed))
        dropped = [g for g in was if g not in now]
        if dropped:
            # after the new indexes exist, the old ones go and the entities stop writing their key
            # attributes: no item is rewritten (what they hold stays, as undeclared attributes)
            drop = DropIndexes(name, dropped)
            ops.append(drop)
            drop.state_forwards(old)
        if before.stream != table.stream:
            ops.append(AlterStream(name, table.stream, before.stream))
    for key, entity in new.entities.items():
        before_e = old.entities.get(key)
        if before_e is not None:
            _check_stored_types(before_e, entity)
        if before_e is None:
            ops.append(CreateEntity(**entity.definition()))
            continue
        ops += _constraint_changes(before_e, entity)
        if before_e.layout() != entity.layout():
            _check_version_used(before_e, entity)
            # a new template, key version, shard count or shard_by: every stored key of it is rewritten
            ops.append(RekeyEntity(entity.table, entity.entity_type, before_e.key_version, entity.key_version,
                                   old=before_e.part(), new=entity.part()))
    for key in old.entities:
        if key not in new.entities and key[0] in new.tables:
            ops.append(DeleteEntity(*key))
    return ops


def _constraint_changes(before: EntityState, after: EntityState) -> list[Operation]:
    """RemoveConstraint for each unique constraint gone (or changed), AddConstraint for each new (or changed) one."""
    ops: list[Operation] = []
    owner_fields = {n for t in after.keys["primary"].values() for n in KeyTemplate(t).placeholders} - {VERSION}
    owner = {n: after.fields[n][0] for n in sorted(owner_fields) if n in after.fields}

    def specs(e: EntityState, names: list[str]) -> dict[str, list[str]]:
        return {n: list(e.fields[n]) for n in names if n in e.fields}

    for name, names in before.constraints.items():
        if after.constraints.get(name) != names:
            ops.append(RemoveConstraint(after.table, after.entity_type, name, specs(before, names), owner))
    for name, names in after.constraints.items():
        if before.constraints.get(name) != names:
            ops.append(AddConstraint(after.table, after.entity_type, name, specs(after, names), owner))
    return ops


def _check_version_used(before: EntityState, after: EntityState) -> None:
    """Refuse a key-version bump that changes no stored key.

    When only ``key_version`` changed and none of the entity's templates contains ``{version}``,
    the rekey would rewrite every item to the very key it has (0 items changed), while the
    operator believes the keys moved to a new version.

    Raises:
        MigrationError: naming the entity, both versions and what to do instead.
    """
    if before.keys != after.keys or before.key_version == after.key_version:
        return
    # the parsed placeholders, not the text: "{{version}}" is the literal "{version}" in every key
    if any(VERSION in KeyTemplate(tpl).placeholders for attrs in after.keys.values() for tpl in attrs.values()):
        return
    escaped = any("{{version}}" in tpl for attrs in after.keys.values() for tpl in attrs.values())
    raise MigrationError(
        f"entity type {after.entity_type!r} in table {after.table!r}: key_version changed from "
        f"{before.key_version!r} to {after.key_version!r}, but none of its key templates contains {{version}}, "
        "so no stored key would change (the migration would rewrite 0 items)"
        + (" ({{version}} is escaped: the literal text '{version}', the same in every key)" if escaped else "")
        + ". Put {version} in the templates "
        f"that should change (e.g. pk=\"{{version}}#...\"), or keep key_version = {before.key_version!r}.")


def _stored_type(kind: str) -> str | None:
    """The DynamoDB type a field kind stores (``"Integer"`` -> ``"N"``), or ``None`` when not one type."""
    from .. import fields

    for obj in vars(fields).values():
        if isinstance(obj, type) and issubclass(obj, fields.Field) and obj.__dict__.get("kind") == kind:
            typ = getattr(obj, "attr_type", None)
            return typ if isinstance(typ, str) else None
    return None


def _check_stored_types(before: EntityState, after: EntityState) -> None:
    """Refuse a key field whose stored type changes (``String`` -> ``Integer``): no operation rewrites it.

    The items keep the old type: the field could not read them, and a multi-attribute GSI
    declaring the new type leaves them out (DynamoDB indexes only items whose key attributes
    have the declared type). Emitting only the index change would make every item unreadable.

    Raises:
        MigrationError: naming the entity, field, both kinds and types, and what to do instead.
    """
    for fname, (attr, kind) in after.fields.items():
        if fname not in before.fields:
            continue
        old_attr, old_kind = before.fields[fname][:2]
        was, now = _stored_type(old_kind), _stored_type(kind)
        if old_attr == attr and was and now and was != now:
            raise MigrationError(
                f"entity {after.entity_type} (table {after.table}): field {fname!r} changes from {old_kind} (stored as "
                f"{was}) to {kind} (stored as {now}) under the same attribute {attr!r}. The stored items hold {was} "
                f"values: the field could not read them, and an index typing {attr!r} as {now} leaves them out. "
                "No migration is generated for this: keep the field's type, or declare the new field under a new "
                "attribute (attr_name=...) and fill it with a RunPython migration before indexing it.")


def suggest_name(ops: list[Operation], first: bool) -> str:
    """A migration name: ``initial``, ``product_v2`` for a rekey, else ``auto``.

    Always a Python identifier (a module name): every character of the entity type and version
    that cannot be in one becomes ``_`` (``hr-ticket`` v2: ``hr_ticket_v2``); ``auto`` when nothing
    usable is left.
    """
    if first:
        return "initial"
    for op in ops:
        raw = op.name_hint()
        if raw is not None:
            name = re.sub(r"_+", "_", re.sub(r"\W", "_", raw, flags=re.ASCII)).strip("_")
            return name if name and name.isidentifier() else "auto"
    return "auto"
