"""Replaying migration files into a frozen state leaves the files' operations as they were (pure, no I/O)."""

from __future__ import annotations

from dynorm.migrations import operations as ops
from dynorm.migrations.loader import Migration, build_state


def _migrations() -> list[Migration]:
    """A table created with a template GSI, an entity using it, then a move onto a multi-attribute GSI."""
    return [
        Migration("0001_initial", [], [
            ops.CreateTable(name="shelf", gsis={"GSI1": ["GSI1PK", "GSI1SK"]}),
            ops.CreateEntity(table="shelf", entity_type="book", key_version="v1",
                             keys={"primary": {"PK": "book:{book_id}", "SK": "book"},
                                   "GSI1": {"GSI1PK": "genre:{genre}", "GSI1SK": "book:{book_id}"}},
                             fields={"book_id": ["book_id", "String"], "genre": ["genre", "String"]}),
        ]),
        Migration("0002_by_genre", ["0001_initial"], [
            ops.SyncIndexes(table="shelf", gsis={"ByGenre": {"pk": {"genre": "S"}}}),
            ops.DropIndexes(table="shelf", gsis=["GSI1"]),
        ]),
    ]


def test_replaying_the_same_migrations_twice_gives_the_same_state() -> None:
    # the executor replays the loaded migrations once per migration it runs, and `dynorm migrate`
    # replays them again to compare with the models: a DropIndexes must find its GSI every time
    migrations = _migrations()
    first = build_state(migrations)
    second = build_state(migrations)
    assert second.tables["shelf"].all_gsis() == first.tables["shelf"].all_gsis() == \
        {"ByGenre": {"pk": {"genre": "S"}, "sk": {}}}
    assert second.entities[("shelf", "book")].keys == {"primary": {"PK": "book:{book_id}", "SK": "book"}}


def test_replaying_leaves_the_operations_of_the_files_unchanged() -> None:
    migrations = _migrations()
    create, entity = migrations[0].operations
    build_state(migrations)
    assert isinstance(create, ops.CreateTable) and isinstance(entity, ops.CreateEntity)
    assert create.describe() == "create table shelf with GSIs GSI1"  # what the file says, not the final state
    assert create.table.gsis == {"GSI1": ("GSI1PK", "GSI1SK")} and create.table.multi_gsis == {}
    assert set(entity.entity.keys) == {"primary", "GSI1"}
