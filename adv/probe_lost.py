"""Probe: lost response of the read_versions fallback move (delivered, then connection dropped; botocore
retries), with another writer acting in between."""
from __future__ import annotations

import urllib.error
import urllib.request
from typing import Any

import botocore.exceptions

import dynorm
from dynorm import backend
from tests.faults import Hook
from tests.migproject import V2, Project, load_v1, widgets


def report(ok: bool, what: str, detail: Any = "") -> None:
    print(("SAFE: " if ok else "BUG: ") + what + (f" ({detail})" if not ok else ""))


def test_probe_lost_move(project: Project) -> None:
    load_v1(project, 5)
    project.write_models(**V2)
    project.makemigrations()
    v2 = project.write_models(**{**V2, "read_versions": ["v2", "v1"]})
    a = v2.Widget.objects.get(widget_id="w00001")
    name = project.table.table_name()
    state = {"n": 0}

    def lose(request: Any, **kw: Any) -> None:
        if state["n"] == 0:
            state["n"] = 1
            req = urllib.request.Request(request.url, data=request.body, headers=dict(request.headers.items()))
            try:
                urllib.request.urlopen(req, timeout=10).read()  # noqa: S310
            except urllib.error.HTTPError:
                pass
            # another v2 process increments the moved item meanwhile (as dynorm would: new token, version+1)
            backend.call("UpdateItem", {"TableName": name, "Key": {"PK": {"S": "v2#W#w00001"}, "SK": {"S": "METADATA"}},
                                        "UpdateExpression": "SET #c = #c + :one, #r = :r ADD version :one",
                                        "ConditionExpression": "attribute_exists(PK)",
                                        "ExpressionAttributeNames": {"#c": "counter", "#r": "_dynorm_rev"},
                                        "ExpressionAttributeValues": {":one": {"N": "1"}, ":r": {"S": "other"}}})
            raise botocore.exceptions.ConnectionClosedError(endpoint_url=request.url)

    err = None
    with Hook("before-send.dynamodb.TransactWriteItems", lose):
        try:
            a.update(counter=dynorm.F("counter") + 10)
        except Exception as exc:  # noqa: BLE001
            err = exc
    items = [(i["PK"]["S"], i["counter"]["N"]) for i in widgets(project.table) if i["widget_id"]["S"] == "w00001"]
    # acceptable: 11 (both applied) or 1 with an error (the stale write refused)
    ok = items == [("v2#W#w00001", "11")] or (err is not None and items == [("v2#W#w00001", "1")])
    report(ok, "lost response of the fallback move + concurrent v2 write", (items, repr(err)))
