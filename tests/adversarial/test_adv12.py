"""Adversarial tests for issue 12 (dynorm outside this repository): each fails on the code under attack."""

from __future__ import annotations

import http.server
import json
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import click
import pytest
from click.testing import CliRunner

import dynorm
from dynorm import Entity, InvalidQuery, Q, Table, backend, capture, conf, fields


class Adv12Table(Table):
    class Meta:
        table_name = "adv12"


class Adv12Ev(Entity):
    dev = fields.String()
    seq = fields.Integer()
    note = fields.String(null=True)
    version = fields.Version()

    class Meta:
        table = Adv12Table
        pk = "DEV#{dev}"
        sk = "EV#{seq:08d}"


class Adv12Thing(Entity):
    tid = fields.String()

    class Meta:
        table = Adv12Table
        pk = "T#{tid}"
        sk = "T"


def _raw(dev: str, seq: int) -> dict[str, Any] | None:
    resp = backend.call("GetItem", {"TableName": Adv12Table.table_name(),
                                    "Key": {"PK": {"S": f"DEV#{dev}"}, "SK": {"S": f"EV#{seq:08d}"}},
                                    "ConsistentRead": True})
    return resp.get("Item")


def _events(n: int = 5) -> list[Adv12Ev]:
    return Adv12Ev.objects.bulk_create([Adv12Ev(dev="d", seq=i) for i in range(n)])


# -- Django habits ------------------------------------------------------------------------

@pytest.mark.usefixtures("dynorm_tables")
def test_none_update_sends_nothing_and_changes_nothing() -> None:
    # Django: qs.none().update(...) updates nothing (returns 0); docs: none() "never sends a request"
    _events(2)
    with capture() as c:
        try:
            Adv12Ev.objects.filter(dev="d", seq=1).none().update(note="written-through-none")
        except dynorm.DynormError:
            pass
    assert c.count == 0, c.operations
    assert "note" not in (_raw("d", 1) or {})


@pytest.mark.usefixtures("dynorm_tables")
def test_none_bulk_update_sends_nothing_and_changes_nothing() -> None:
    # Django's bulk_update on an empty queryset filters by pk and updates 0 rows
    objs = _events(2)
    objs[0].note = "written-through-none"
    with capture() as c:
        try:
            n = Adv12Ev.objects.none().bulk_update(objs[:1], ["note"])
        except dynorm.DynormError:
            n = 0
    assert n == 0 and c.count == 0, c.operations
    assert "note" not in (_raw("d", 0) or {})


@pytest.mark.usefixtures("dynorm_tables")
def test_latest_with_descending_field_is_not_the_greatest() -> None:
    # Django: latest("-seq") is the item with the smallest seq (the sign is the direction)
    _events(5)
    qs = Adv12Ev.objects.filter(dev="d")
    try:
        latest, earliest = qs.latest("-seq"), qs.earliest("-seq")
    except InvalidQuery:
        return  # refusing the sign before I/O would also be honest
    assert (latest.seq, earliest.seq) == (0, 4)


@pytest.mark.usefixtures("dynorm_tables")
def test_in_bulk_on_a_filtered_queryset_respects_the_filter() -> None:
    # Django: Model.objects.filter(...).in_bulk(ids) returns only ids that match the filter
    _events(5)
    # lead's decision 8: refused before any request (BatchGetItem cannot apply the filter)
    with capture() as c, pytest.raises(InvalidQuery, match="in_bulk"):
        Adv12Ev.objects.filter(dev="d", seq__gte=3).in_bulk([("d", 1), ("d", 4)])
    assert c.count == 0
    assert sorted(Adv12Ev.objects.in_bulk([("d", 1), ("d", 4)])) == [("d", 1), ("d", 4)]


@pytest.mark.usefixtures("dynorm_tables")
def test_pk_alias_inside_q_objects() -> None:
    # filter(pk=...) works; the same alias inside Q (Django's Q(pk=1) | Q(pk=2)) does not
    _events(3)
    got = Adv12Ev.objects.filter(Q(pk=("d", 1)) | Q(pk=("d", 2)), dev="d")
    assert sorted(o.seq for o in Adv12Ev.objects.filter(dev="d").exclude(Q(pk=("d", 1)))) == [0, 2]
    assert Adv12Ev.objects.filter(dev="d").values("pk")[0] == {"pk": ("d", 0)}
    assert [o.seq for o in Adv12Ev.objects.filter(dev="d").only("pk").order_by("-pk")] == [2, 1, 0]
    assert sorted(o.seq for o in got) == [1, 2]


# -- endpoints and credentials ------------------------------------------------------------

@pytest.mark.xfail(strict=True, reason="q11c fixes is_local")
@pytest.mark.parametrize("endpoint", ["http://127.example.com:8000", "https://127.0.0.1.attacker.example/"])
def test_hostnames_starting_with_127_are_not_loopback(endpoint: str) -> None:
    # only IP literals 127.0.0.0/8 are loopback; a DNS name that starts with "127." can be anywhere,
    # and is_local=True skips the confirmation before migrate (nothing is contacted here)
    from dynorm.cli.confirm import confirm_changes

    settings = conf.Settings(endpoint=endpoint)
    assert settings.is_local is False
    with pytest.raises(click.UsageError):  # stdin is not a terminal under pytest: refuse without --yes
        confirm_changes(settings, "create missing tables and GSIs", ["x"], yes=False)


class _NotDynamoDB(http.server.BaseHTTPRequestHandler):
    mode = "204"

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if type(self).mode == "204":
            self.send_response(204)
        else:  # 200, empty body, no Content-Type
            self.send_response(200)
            self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def not_dynamodb() -> Iterator[str]:
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _NotDynamoDB)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    previous = conf.get_settings().endpoint
    conf.configure(endpoint=f"http://127.0.0.1:{srv.server_address[1]}")
    try:
        yield conf.get_settings().endpoint or ""
    finally:
        conf.configure(endpoint=previous)
        srv.shutdown()
        srv.server_close()


@pytest.mark.parametrize("mode", ["204", "200-empty-no-content-type"])
def test_a_non_dynamodb_server_does_not_acknowledge_writes(not_dynamodb: str, mode: str) -> None:
    # an HTTP server answering 204 / 200 without a body is not DynamoDB: save() must not report success
    # (acknowledged means present) and get() must not read as "no such item"
    _NotDynamoDB.mode = mode
    with pytest.raises(dynorm.ServiceError):
        Adv12Thing(tid="a").save()
    with pytest.raises(dynorm.ServiceError):
        Adv12Thing.objects.get(tid="a")


def test_a_missing_aws_profile_is_a_dynorm_error(monkeypatch: pytest.MonkeyPatch) -> None:
    # AWS_PROFILE naming no profile: a raw botocore ProfileNotFound escapes (the CLI prints
    # "unexpected ProfileNotFound"); users catching dynorm.DynormError do not see it
    monkeypatch.setenv("AWS_PROFILE", "adv12-no-such-profile")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/adv12-config")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/adv12-credentials")
    backend.reset_client()
    previous = conf.get_settings().endpoint
    try:
        with pytest.raises(dynorm.DynormError, match="adv12-no-such-profile"):
            conf.configure(endpoint="http://127.0.0.1:9")  # loopback: nothing listens on the discard port
            Adv12Thing.objects.get(tid="a")
    finally:
        monkeypatch.delenv("AWS_PROFILE")
        backend.reset_client()
        conf.configure(endpoint=previous)
        backend.reset_client()


# -- dynorm local -------------------------------------------------------------------------

def test_local_stop_does_not_kill_a_process_that_is_not_the_recorded_server(tmp_path: Path) -> None:
    # server.json outlives the server (kill -9, reboot); its pid may now be any process of the user.
    # `dynorm local stop` SIGTERMs (then SIGKILLs) it without checking the endpoint still answers.
    from dynorm.local import stop_recorded

    victim = subprocess.Popen(["sleep", "30"])
    try:
        state = tmp_path / "server.json"
        state.write_text(json.dumps({"pid": victim.pid, "port": 9, "endpoint": "http://127.0.0.1:9"}))
        stop_recorded(state)
        time.sleep(0.3)
        assert victim.poll() is None, "dynorm local stop killed an unrelated process"
    finally:
        victim.kill()
        victim.wait()


def test_local_start_with_another_port_does_not_silently_reuse_the_recorded_server(
        dynamodb_local: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # `dynorm local start --port P` while a server is recorded on another port exits 0 saying
    # "already running at <other port>": a script then exports http://127.0.0.1:P and finds nothing.
    from dynorm.cli import cli

    monkeypatch.chdir(tmp_path)
    port = int(dynamodb_local.rsplit(":", 1)[1])
    (tmp_path / ".dynamodb-local").mkdir()
    (tmp_path / ".dynamodb-local" / "server.json").write_text(
        json.dumps({"pid": 0, "port": port, "endpoint": dynamodb_local}))
    monkeypatch.setenv("DYNAMODB_LOCAL_JAR", str(tmp_path / "no-such.jar"))  # never really start one
    other = port + 1 if port < 65535 else port - 1
    result = CliRunner().invoke(cli, ["local", "start", "--port", str(other), "--no-install"])
    assert result.exit_code != 0 or f":{other}" in result.output, result.output


# -- hints that send the user into a wall -------------------------------------------------

@pytest.mark.usefixtures("dynorm_tables")
def test_the_isnull_hint_names_a_lookup_that_works() -> None:
    # the isnull error says "... or exact=None"; filter(note=None) is then refused
    Adv12Ev(dev="d", seq=1).save()
    Adv12Ev(dev="d", seq=2, note="x").save()
    with pytest.raises(InvalidQuery) as err:
        list(Adv12Ev.objects.filter(dev="d", note__isnull=True))
    if "exact=None" in str(err.value):
        assert [o.seq for o in Adv12Ev.objects.filter(dev="d", note=None)] == [1]


@pytest.mark.usefixtures("dynorm_tables")
def test_a_key_dynamodb_local_refuses_is_explained(dynamodb_local: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # dynorm now signs with the user's own keys on loopback; DynamoDB Local refuses keys that are not
    # letters and digits ("fake_key"), and the error is only "The Access Key ID or security token is invalid"
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "fake_key")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "fake_secret")
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    backend.reset_client()
    try:
        with pytest.raises(dynorm.ServiceError) as err:
            Adv12Thing.objects.get(tid="a")
        msg = str(err.value)
        assert "fake_key" in msg or "AWS_ACCESS_KEY_ID" in msg or "letters" in msg.lower(), msg
    finally:
        monkeypatch.undo()
        backend.reset_client()


# -- create_table(exist_ok=True) and a lost response -------------------------------------

def test_create_table_with_a_lost_response_is_created_and_finished(dynamodb_local: str) -> None:
    # CreateTable reaches DynamoDB, its answer is lost, botocore retries: ResourceInUseException.
    # exist_ok=True then reports "it existed" (False) and skips UpdateTimeToLive: the table the call
    # itself created has no TTL; exist_ok=False reports a failure for a table it created.
    import urllib.request
    import uuid

    import botocore.exceptions

    from tests.faults import Hook

    class LostTable(Table):
        class Meta:
            table_name = f"adv12-lost-{uuid.uuid4().hex[:8]}"
            ttl_attribute = "expires"

    class LostItem(Entity):
        xid = fields.String()
        expires = fields.TTL(null=True)

        class Meta:
            table = LostTable
            pk = "X#{xid}"
            sk = "X"

    sent = {"n": 0}

    def applied_then_lost(request: Any, **kwargs: Any) -> None:
        sent["n"] += 1
        if sent["n"] == 1:
            headers = {k: v for k, v in request.headers.items() if k.lower() != "content-length"}
            urllib.request.urlopen(urllib.request.Request(request.url, data=request.body, headers=headers),
                                   timeout=10).read()
            raise botocore.exceptions.ConnectionClosedError(endpoint_url=request.url)

    try:
        with Hook("before-send.dynamodb.CreateTable", applied_then_lost):
            created = LostTable.create_table(exist_ok=True)
        ttl = backend.call("DescribeTimeToLive", {"TableName": LostTable.table_name()})["TimeToLiveDescription"]
        assert (created, ttl.get("TimeToLiveStatus")) == (True, "ENABLED")
    finally:
        try:
            LostTable.delete_table(wait=False)
        except Exception:  # noqa: BLE001
            pass


@pytest.mark.parametrize("habit, dynorm_way", [("select_related", "prefetch"), ("aggregate", ""), ("annotate", "")])
def test_django_methods_the_docs_list_as_not_in_dynamodb_name_the_dynorm_way(habit: str, dynorm_way: str) -> None:
    # docs/querying.md ("Coming from Django") lists select_related()/aggregate()/annotate() with the
    # dynorm way; the issue asks for "no bare AttributeError". They raise exactly that.
    qs = Adv12Ev.objects.filter(dev="d")
    with capture() as c:
        try:
            getattr(qs, habit)("x")
        except AttributeError as exc:
            pytest.fail(f"bare AttributeError: {exc}")
        except dynorm.DynormError as exc:
            assert dynorm_way in str(exc)
    assert c.count == 0


def test_ctrl_c_while_dynorm_local_start_waits_leaves_no_unstoppable_server(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # `dynorm local start` (keep=True: java in its own session, so the terminal's Ctrl-C does not reach it)
    # interrupted while waiting for the server to answer: the java process survives, nothing records it,
    # `dynorm local stop` says "No DynamoDB Local was running" and the port stays taken.
    import dynorm.local as local

    jar = local.find_jar()
    monkeypatch.chdir(tmp_path)
    server = local.LocalDynamoDB(port=local._free_port(), jar=jar)

    def ctrl_c(*args: Any, **kwargs: Any) -> bool:
        raise KeyboardInterrupt

    monkeypatch.setattr(local, "ping", ctrl_c)
    try:
        with pytest.raises(KeyboardInterrupt):
            server.start(keep=True)
        assert server.process is not None
        time.sleep(0.5)
        monkeypatch.undo()
        recorded = local.STATE_FILE.is_file() and \
            json.loads(local.STATE_FILE.read_text()).get("pid") == server.process.pid
        assert server.process.poll() is not None or recorded, "orphan DynamoDB Local left running, unrecorded"
    finally:
        server.stop()


def test_dynamodb_local_exposure_is_documented_and_said(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # lead's decision 10: DynamoDB Local has no bind-address option (it listens on every interface);
    # the docs and `dynorm local start`'s output say so instead of promising 127.0.0.1 only
    import dynorm.local as local
    from dynorm.cli import cli

    root = Path(__file__).resolve().parents[2]
    for doc in ("docs/cli.md", "docs/getting-started.md"):
        text = " ".join((root / doc).read_text().split())
        assert "every network interface" in text and "firewall" in text, doc
    assert "127.0.0.1 only" not in (root / "docs/getting-started.md").read_text()

    started: list[Any] = []

    def fake_start(self: Any, keep: bool = False, timeout: float = 60.0) -> Any:
        started.append(self.port)
        self.process = subprocess.Popen(["sleep", "30"])
        return self

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(local.LocalDynamoDB, "start", fake_start)
    monkeypatch.setattr(local, "check_java", lambda *a: ("java", 17))
    monkeypatch.setattr(local, "find_jar", lambda *a: tmp_path / "DynamoDBLocal.jar")
    monkeypatch.setattr(local, "read_state", lambda *a: None)
    result = CliRunner().invoke(cli, ["local", "start", "--port", "8765", "--no-install"])
    state = json.loads((tmp_path / ".dynamodb-local" / "server.json").read_text())
    subprocess.run(["kill", str(state["pid"])], check=False)
    assert result.exit_code == 0, result.output
    out = " ".join(result.output.split())
    assert started == [8765] and "every network interface" in out and "firewall" in out, out


class Adv12Reading(Entity):
    sensor = fields.String()
    year = fields.Integer()
    seq = fields.Integer()

    class Meta:
        table = Adv12Table
        pk = "S#{sensor}"
        sk = "Y#{year:04d}#{seq:06d}"


@pytest.mark.usefixtures("dynorm_tables")
def test_latest_on_a_later_field_of_a_composite_sort_key() -> None:
    # latest("seq") is accepted because seq is *in* the sort key, but the key orders by year first:
    # Django's latest("seq") is the greatest seq (4); dynorm returns year 2022's seq 2
    Adv12Reading.objects.bulk_create([Adv12Reading(sensor="s", year=2020 + i % 3, seq=i) for i in range(5)])
    qs = Adv12Reading.objects.filter(sensor="s")
    try:
        got = qs.latest("seq")
    except InvalidQuery:
        return  # refusing a field that is not the leading sort-key field is also honest
    assert got.seq == max(r.seq for r in qs)
