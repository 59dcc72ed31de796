"""``dynorm streams tail`` prints changes as they are written (a real process on DynamoDB Local's stream)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from dynorm import conf

pytestmark = pytest.mark.dynamodb_local_only("DynamoDB Streams: moto's stream is not DynamoDB's")

REPO = Path(__file__).resolve().parents[2]


def start_tail(tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    """Start `dynorm streams tail` on the session's tables; return once it is reading the stream."""
    settings = conf.get_settings()
    cfg = tmp_path / "dynorm.yaml"
    cfg.write_text(f"models: [tests.models]\ntable_prefix: '{settings.table_prefix}'\n"
                   f"connection: {{region: {settings.region}, endpoint: '{settings.endpoint}'}}\n")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("DYNORM_CONFIG", None)
    proc = subprocess.Popen([sys.executable, "-m", "dynorm", "--config", str(cfg), "streams", "tail", *args],
                            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    ready = proc.stderr.readline()
    assert ready.startswith("tailing "), ready + proc.stderr.read()
    return proc


def finish(proc: subprocess.Popen[str]) -> list[str]:
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    return out.splitlines()


def test_tail_prints_each_change_as_it_is_written(dynorm_tables: Any, tmp_path: Path) -> None:
    from tests.models import Post

    proc = start_tail(tmp_path, "--table", "Feed", "--interval", "0.1", "--limit", "3")
    try:
        post = Post.objects.create(post_id="p1", author="ann", title="Hello")
        post.title = "Hello, world"
        post.save()
        post.delete()
        lines = finish(proc)
    finally:
        proc.kill()
    assert lines == ["created  Post post_id='p1'", "updated  Post post_id='p1' fields: title, version",
                     "deleted  Post post_id='p1'"]


def test_tail_json_has_the_items(dynorm_tables: Any, tmp_path: Path) -> None:
    from tests.models import Like

    proc = start_tail(tmp_path, "--format", "json", "--interval", "0.1", "--limit", "1")
    try:
        Like.objects.create(post_id="p1", user_id="u1")
        (line,) = finish(proc)
    finally:
        proc.kill()
    change = json.loads(line)
    assert (change["kind"], change["entity"], change["entity_type"], change["old"]) == ("created", "Like", "LIKE", None)
    assert change["new"]["user_id"] == "u1" and change["keys"] == {"PK": "v1#POST#p1", "SK": "LIKE#u1"}


def test_tail_json_prints_binary_values_as_base64(dynorm_tables: Any, tmp_path: Path) -> None:
    from dynorm import backend
    from tests.models import Feed

    proc = start_tail(tmp_path, "--format", "json", "--interval", "0.1", "--limit", "1")
    try:
        backend.call("PutItem", {"TableName": Feed.table_name(), "Item": {
            "PK": {"S": "X#1"}, "SK": {"S": "A"}, "entityType": {"S": "AUDIT"}, "blob": {"B": b"\x00\xff"}}})
        (line,) = finish(proc)
    finally:
        proc.kill()
    assert json.loads(line)["new"]["blob"] == "AP8="  # as DynamoDB's JSON spells b"\x00\xff"


def test_tail_ctrl_c_exits_130_as_every_command(dynorm_tables: Any, tmp_path: Path) -> None:
    import signal
    import time

    proc = start_tail(tmp_path, "--interval", "0.1")
    try:
        time.sleep(1.0)  # in the polling loop (every table's "tailing" line printed)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert "stopped after 0 change(s)" in err


def test_a_declared_stream_not_yet_applied_says_to_migrate(dynorm_tables: Any, monkeypatch: Any) -> None:
    from dynorm import backend, streams
    from dynorm.exceptions import ConfigurationError
    from tests.models import Feed

    real = backend.call

    def no_stream(operation: str, params: dict[str, Any], **kw: Any) -> Any:
        out = real(operation, params, **kw)
        if operation == "DescribeTable":
            out["Table"].pop("StreamSpecification", None)
            out["Table"].pop("LatestStreamArn", None)
        return out

    monkeypatch.setattr(backend, "call", no_stream)
    with pytest.raises(ConfigurationError, match=r"declared but not applied; run `dynorm makemigrations` and "
                                                 r"`dynorm migrate`"):
        streams.StreamReader(Feed)
