"""A partial migration whose failed items conflict with a different item at their new key has a
documented way to finish: `dynorm migrate --resolve keep-new|keep-old`, never a state that only
hand-editing the table can leave."""

from __future__ import annotations

from typing import Any

import pytest
from click.testing import CliRunner

from dynorm import backend
from dynorm.cli import cli
from tests.migproject import V2, Project, load_v1, widgets


def _raw(project: Project, pk: str) -> dict[str, Any] | None:
    return backend.call("GetItem", {"TableName": project.table.table_name(), "ConsistentRead": True,
                                    "Key": {"PK": {"S": pk}, "SK": {"S": "METADATA"}}}).get("Item")


def _conflicted(project: Project) -> str:
    """w00001 has a different item at its v2 key (written by an application meanwhile): the move fails it."""
    load_v1(project, 6)
    old = _raw(project, "v1#W#w00001")
    assert old is not None
    rev = project.table._meta.revision_attribute
    other = {**old, "PK": {"S": "v2#W#w00001"}, "counter": {"N": "99"}, rev: {"S": "written-at-v2"}}
    other.pop("GSI1PK", None), other.pop("GSI1SK", None)
    backend.call("PutItem", {"TableName": project.table.table_name(), "Item": other})
    project.write_models(**V2)
    project.makemigrations()
    cfg = str(project.config())
    for _ in range(2):  # every re-run fails the same item
        result = CliRunner().invoke(cli, ["--config", cfg, "migrate"])
        assert result.exit_code == 1 and "NOT applied (partial)" in result.output, result.output
        assert "--resolve keep-new" in result.output and "--resolve keep-old" in result.output
        # the closing advice matches: a plain re-run does not settle it (it said "Fix the cause and run again")
        assert "fail again on a plain re-run: settle them with `dynorm" in result.output, result.output
        assert "Fix the cause" not in result.output
    return cfg


@pytest.mark.parametrize("keep, counter", [("keep-new", "99"), ("keep-old", "0")])
def test_resolve_finishes_the_partial_migration(project: Project, keep: str, counter: str) -> None:
    cfg = _conflicted(project)
    result = CliRunner().invoke(cli, ["--config", cfg, "migrate", "--resolve", keep])
    assert result.exit_code == 0, result.output
    assert "Applied 1 migration(s)" in result.output and "0002_widget_v2" in result.output
    assert _raw(project, "v1#W#w00001") is None
    assert (_raw(project, "v2#W#w00001") or {})["counter"]["N"] == counter
    items = widgets(project.table)
    assert len(items) == 6 and all(i["PK"]["S"].startswith("v2#") for i in items)
    shown = CliRunner().invoke(cli, ["--config", cfg, "showmigrations"]).output
    assert "[X] 0002_widget_v2" in shown
