"""Adversarial tests for issue 10 (adv10b) still open on this branch; the others moved to
tests/integration/test_read_versions_writes.py and test_migration_completion.py."""

from __future__ import annotations

from typing import Any

import pytest

from tests.migproject import V2, Project, load_v1, widgets


def _v1_only(project: Project) -> Any:
    """Items at v1 only (the rekey not run yet); the v2 models read through read_versions=[v2, v1]."""
    load_v1(project, 10)
    project.write_models(**V2)
    project.makemigrations()
    return project.write_models(**{**V2, "read_versions": ["v2", "v1"]})


@pytest.mark.xfail(strict=True, reason="create() under read_versions is fixed by branch fix13b "
                   "(not this branch's assignment): it checks only the current key")
def test_create_refuses_an_id_that_get_finds_through_read_versions(project: Project) -> None:
    """During the rollout (v2 models, read_versions=[v2, v1], the item still at v1), `create()` of an existing
    id succeeds: it checks only the v2 key. get() now returns the new item, the v1 one is shadowed, and the
    move is stuck partial ("the new key already holds a different item")."""
    from dynorm.exceptions import AlreadyExists

    v2 = _v1_only(project)
    assert v2.Widget.objects.get(widget_id="w00001").maker == "m1"
    with pytest.raises(AlreadyExists):
        v2.Widget.objects.create(widget_id="w00001", maker="dup")
    assert [i["PK"]["S"] for i in widgets(project.table) if i["widget_id"]["S"] == "w00001"] == ["v1#W#w00001"]
