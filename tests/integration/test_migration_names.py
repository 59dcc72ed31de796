"""`makemigrations` always suggests a name that is a Python identifier, whatever the entity type, and
refuses a key-version bump that would change no stored key."""

from __future__ import annotations

from dynorm.migrations.autodetector import suggest_name
from dynorm.migrations.operations import RekeyEntity
from tests.migproject import MODELS_SRC, TABLE_SRC, V1, V2, Project


def _models(project: Project, entity_type: str, **variant: str | None) -> str:
    return MODELS_SRC.format(pkg=project.pkg, **variant).replace('"WIDGET"', repr(entity_type))


def test_an_entity_type_with_a_dash_gives_a_valid_migration_name(project: Project) -> None:
    project.stage(TABLE_SRC, _models(project, "hr-ticket", **V1))
    assert project.makemigrations().name == "0001_initial"
    project.stage(TABLE_SRC, _models(project, "hr-ticket", **V2))
    result = project.makemigrations()
    assert result.name == "0002_hr_ticket_v2"
    assert result.path is not None and result.path.exists()


def test_suggested_names_are_identifiers() -> None:
    part = {"keys": {}, "fields": {}}
    cases = [("hr-ticket", "v2", "hr_ticket_v2"), ("Ord.er line", "v1.5", "ord_er_line_v1_5"),
             ("Ünïcode", "v2", "n_code_v2"), ("--", "-", "auto"), ("9lives", "v2", "auto")]
    for entity_type, version, expected in cases:
        op = RekeyEntity("t", entity_type, "v0", version, old=part, new=part)
        name = suggest_name([op], first=False)
        assert name == expected and (name.isidentifier() or name == "auto"), (entity_type, name)


def test_a_key_version_bump_that_changes_no_key_is_refused(project: Project) -> None:
    import pytest

    from dynorm.migrations.operations import MigrationError

    def unversioned_keys(**variant: str | None) -> str:
        return _models(project, "WIDGET", **variant).replace('"{version}#W#', '"W#').replace('"{version}#M#', '"M#')

    project.stage(TABLE_SRC, unversioned_keys(**V1))
    assert project.makemigrations().name == "0001_initial"
    project.stage(TABLE_SRC, unversioned_keys(**{**V1, "version": "v2"}))
    with pytest.raises(MigrationError, match=r"none of its key templates contains \{version\}.*rewrite 0 items"):
        project.makemigrations()
    assert not (project.dir / "migrations" / "0002_widget_v2.py").exists()


def test_a_key_version_bump_whose_only_version_is_an_escaped_literal_is_refused(project: Project) -> None:
    """``{{version}}`` renders the literal text ``{version}`` in every key: no key would change either."""
    import pytest

    from dynorm.migrations.operations import MigrationError

    def escaped_keys(**variant: str | None) -> str:
        return _models(project, "WIDGET", **variant).replace('"{version}#', '"{{version}}#')

    project.stage(TABLE_SRC, escaped_keys(**V1))
    assert project.makemigrations().name == "0001_initial"
    project.stage(TABLE_SRC, escaped_keys(**{**V1, "version": "v2"}))
    with pytest.raises(MigrationError, match=r"none of its key templates contains \{version\}.*rewrite 0 items\) "
                                             r"\(\{\{version\}\} is escaped"):
        project.makemigrations()
    assert not (project.dir / "migrations" / "0002_widget_v2.py").exists()


ESCAPED_COLLECTION = '''
from dynorm import Entity, fields
from {pkg}.tables import MigShop

class Issue(Entity):
    issue_id = fields.String()

    class Meta:
        table = MigShop
        entity_type = "ISSUE"
        key_version = "v2"
        pk = "{{{{version}}}}#I#{{issue_id}}"
        sk = "ISSUE"

class Comment(Entity):
    issue_id = fields.String()
    comment_id = fields.String()

    class Meta:
        table = MigShop
        entity_type = "COMMENT"
        key_version = "v1"
        pk = "{{{{version}}}}#I#{{issue_id}}"
        sk = "C#{{comment_id}}"
'''


def test_an_escaped_version_does_not_split_an_item_collection(project: Project) -> None:
    """Two entities whose shared partition-key template holds only the literal ``{{version}}`` stay in
    one collection whatever their key versions: `check` must not report a split."""
    models = project.stage(TABLE_SRC, ESCAPED_COLLECTION.format(pkg=project.pkg))
    assert models.Issue._meta.primary.pk.template == "{{version}}#I#{issue_id}"
    assert project.table.check() == []
