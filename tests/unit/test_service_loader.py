"""dynorm's sessions load a service model as botocore does, without walking every service folder
first (dynorm.backend.loader; the cold start in docs/performance.md)."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import botocore.loaders
import botocore.session
import pytest
from botocore.exceptions import UnknownServiceError

from dynorm.backend.loader import ServiceLoader, service_loader


@pytest.fixture
def walks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The type names botocore's full walk of every service folder was made for."""
    made: list[str] = []
    walk = botocore.loaders.Loader.list_available_services

    def counted(self: Any, type_name: str) -> Any:
        made.append(type_name)
        return walk(self, type_name)

    monkeypatch.setattr(botocore.loaders.Loader, "list_available_services", counted)
    return made


@pytest.mark.parametrize("type_name", ["service-2", "endpoint-rule-set-1"])
def test_a_service_model_loads_as_botocores_without_walking_every_service(walks: list[str], type_name: str) -> None:
    ours = ServiceLoader().load_service_model("dynamodb", type_name)
    assert walks == []
    assert ours == botocore.loaders.Loader().load_service_model("dynamodb", type_name)
    assert walks == [type_name]  # botocore's own loader walks


def test_a_client_is_built_without_walking_every_service(walks: list[str]) -> None:
    session = botocore.session.Session()
    session.register_component("data_loader", service_loader(session))
    client = session.create_client("dynamodb", region_name="eu-west-1", aws_access_key_id="k",
                                   aws_secret_access_key="s")
    assert client.meta.service_model.service_name == "dynamodb" and walks == []
    assert client.meta.endpoint_url == "https://dynamodb.eu-west-1.amazonaws.com"  # the rule set was loaded


def test_an_unknown_service_is_refused_naming_the_known_ones_as_botocore_does() -> None:
    with pytest.raises(UnknownServiceError) as ours:
        ServiceLoader().load_service_model("dynamodbb", "service-2")
    with pytest.raises(UnknownServiceError) as theirs:
        botocore.loaders.Loader().load_service_model("dynamodbb", "service-2")
    assert str(ours.value) == str(theirs.value) and "dynamodb, " in str(ours.value)


def test_the_list_of_available_services_is_botocores() -> None:
    session = botocore.session.Session()
    session.register_component("data_loader", service_loader(session))
    assert session.get_available_services() == botocore.session.Session().get_available_services()


def test_aws_data_path_models_come_first_as_in_botocore(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = botocore.loaders.Loader().load_service_model("dynamodb", "service-2")
    model["metadata"]["serviceId"] = "DynamoDB from AWS_DATA_PATH"
    folder = tmp_path / "dynamodb" / model["metadata"]["apiVersion"]
    folder.mkdir(parents=True)
    (folder / "service-2.json").write_text(json.dumps(model))
    monkeypatch.setenv("AWS_DATA_PATH", str(tmp_path))
    session = botocore.session.Session()
    loaded = service_loader(session).load_service_model("dynamodb", "service-2")
    assert loaded["metadata"]["serviceId"] == "DynamoDB from AWS_DATA_PATH"
    assert botocore.session.Session().get_component("data_loader").search_paths[0] == os.fspath(tmp_path)


def test_threads_loading_other_services_each_get_their_own(walks: list[str]) -> None:
    loader = ServiceLoader()
    names = ["dynamodb", "dynamodbstreams", "sts", "s3"] * 4
    got: dict[int, str] = {}

    def load(i: int, name: str) -> None:
        got[i] = loader.load_service_model(name, "service-2")["metadata"]["endpointPrefix"]

    threads = [threading.Thread(target=load, args=(i, n)) for i, n in enumerate(names)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [got[i] for i in range(len(names))] == [
        {"dynamodb": "dynamodb", "dynamodbstreams": "streams.dynamodb", "sts": "sts", "s3": "s3"}[n] for n in names]
    assert walks == []


# -- the data files are parsed into plain dicts (ModelFileLoader), equal to botocore's, key order included --

def _no_ordered_dicts(node: Any) -> bool:
    if isinstance(node, dict):
        return type(node) is dict and all(_no_ordered_dicts(v) for v in node.values())
    if isinstance(node, list):
        return all(_no_ordered_dicts(v) for v in node)
    return True


# every file a dynorm client (and a credential provider's STS client) reads
_FILES = [("service", "dynamodb", "service-2"), ("service", "dynamodb", "endpoint-rule-set-1"),
          ("service", "dynamodbstreams", "service-2"), ("service", "sts", "endpoint-rule-set-1"),
          ("service", "dynamodb", "paginators-1"), ("service", "dynamodb", "waiters-2"),
          ("data", "endpoints", ""), ("data", "partitions", ""), ("data", "sdk-default-configuration", ""),
          ("data", "_retry", "")]


@pytest.mark.parametrize(("kind", "name", "type_name"), _FILES)
def test_data_files_load_as_botocores_in_the_same_key_order_as_plain_dicts(
        kind: str, name: str, type_name: str) -> None:
    def load(loader: Any) -> Any:
        return loader.load_service_model(name, type_name) if kind == "service" else loader.load_data(name)

    ours, theirs = load(ServiceLoader()), load(botocore.loaders.Loader())
    assert json.dumps(ours) == json.dumps(theirs)  # equal, and every object's keys in the same order
    assert ours == theirs
    assert _no_ordered_dicts(ours)  # the parse that costs a third of botocore's (docs/performance.md)


def test_a_file_loads_from_json_before_json_gz_and_none_when_missing(tmp_path: Path) -> None:
    import gzip

    from dynorm.backend.loader import ModelFileLoader

    (tmp_path / "both.json").write_text('{"from": "json", "big": 123456789012345678901234567890}')
    with gzip.open(tmp_path / "both.json.gz", "wt") as fp:
        fp.write('{"from": "gz"}')
    with gzip.open(tmp_path / "gz.json.gz", "wt") as fp:
        fp.write('{"from": "gz", "text": "caf\\u00e9 \\ud83d\\ude00"}')
    ours, theirs = ModelFileLoader(), botocore.loaders.JSONFileLoader()
    for stem in ("both", "gz", "missing"):
        assert ours.load_file(str(tmp_path / stem)) == theirs.load_file(str(tmp_path / stem))
    assert ours.load_file(str(tmp_path / "both")) == {"from": "json", "big": 123456789012345678901234567890}
    assert ours.load_file(str(tmp_path / "gz")) == {"from": "gz", "text": "caf\u00e9 \U0001f600"}
    assert ours.load_file(str(tmp_path / "missing")) is None
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(ValueError):
        ours.load_file(str(tmp_path / "bad"))


@pytest.mark.parametrize("region", ["us-east-1", "eu-west-1", "us-gov-west-1", "cn-north-1", "us-iso-east-1",
                                    "local", "xx-nowhere-1"])
@pytest.mark.parametrize("variant", [{}, {"use_fips_endpoint": True}, {"use_dualstack_endpoint": True}])
def test_clients_resolve_endpoints_and_signing_as_botocores(region: str, variant: dict[str, bool]) -> None:
    from botocore.config import Config

    def build(session: Any, service: str) -> Any:
        return session.create_client(service, region_name=region, aws_access_key_id="k", aws_secret_access_key="s",
                                     config=Config(**variant))

    ours_session = botocore.session.Session()
    ours_session.register_component("data_loader", service_loader(ours_session))
    for service in ("dynamodb", "dynamodbstreams", "sts"):
        try:
            theirs = build(botocore.session.Session(), service)
        except Exception as exc:  # noqa: BLE001 - the same refusal is expected of ours
            with pytest.raises(type(exc)):
                build(ours_session, service)
            continue
        ours = build(ours_session, service)
        assert (ours.meta.endpoint_url, ours.meta.region_name, ours.meta.partition) == \
               (theirs.meta.endpoint_url, theirs.meta.region_name, theirs.meta.partition)
        assert ours.meta.service_model.signing_name == theirs.meta.service_model.signing_name
        assert ours.meta.config.signature_version == theirs.meta.config.signature_version


def test_a_json_file_holding_null_gives_way_to_its_gz_sibling_as_in_botocore(tmp_path: Path) -> None:
    import gzip

    from dynorm.backend.loader import ModelFileLoader

    (tmp_path / "x.json").write_text("null")
    with gzip.open(tmp_path / "x.json.gz", "wt") as fp:
        fp.write('{"from": "gz"}')
    (tmp_path / "only.json").write_text("null")
    for stem, expected in (("x", {"from": "gz"}), ("only", None)):
        assert ModelFileLoader().load_file(str(tmp_path / stem)) == expected
        assert botocore.loaders.JSONFileLoader().load_file(str(tmp_path / stem)) == expected


def test_each_file_loaded_is_named_on_botocores_logger(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """botocore's debug line is how one sees which AWS_DATA_PATH or ~/.aws/models file was used."""
    from dynorm.backend.loader import ModelFileLoader

    (tmp_path / "x.json").write_text("{}")
    with caplog.at_level("DEBUG", logger="botocore.loaders"):
        ModelFileLoader().load_file(str(tmp_path / "x"))
        botocore.loaders.JSONFileLoader().load_file(str(tmp_path / "x"))
    lines = [(r.name, r.getMessage()) for r in caplog.records]
    assert lines == [("botocore.loaders", f"Loading JSON file: {tmp_path / 'x.json'}")] * 2
