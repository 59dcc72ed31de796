"""The key-version record migrate keeps per table (dynorm.keyversions): pure transitions, no network."""

from __future__ import annotations

from pathlib import Path

import pytest

from dynorm import conf, keyversions
from dynorm.exceptions import ConfigurationError
from dynorm.keyversions import KeyVersionChange, Retired, applied, decode, encode, reversal_started, unrecorded


def change(old: str, new: str | None, retires: bool = True, etype: str = "WIDGET",
           before: str | None = "0001_initial") -> KeyVersionChange:
    return KeyVersionChange("t-migshop", "PK", "SK", etype, old, new, retires, before)


def test_a_move_retires_the_old_version_a_copy_does_not() -> None:
    moved = applied({}, [change("v1", "v2")], "0002_widget_v2")
    assert moved["WIDGET"].version == "v2" and moved["WIDGET"].migration == "0002_widget_v2"
    assert moved["WIDGET"].retired == {"v1": Retired("0002_widget_v2", "0001_initial", "moved")}
    copied = applied({}, [change("v1", "v2", retires=False)], "0002_widget_v2")
    assert copied["WIDGET"].version == "v2" and copied["WIDGET"].retired == {}


def test_delete_version_retires_what_it_deleted_and_a_same_version_rekey_nothing() -> None:
    entries = applied({}, [change("v1", "v2", retires=False)], "0002")
    entries = applied(entries, [change("v1", None)], "0003_drop_v1")
    assert entries["WIDGET"].version == "v2"
    assert entries["WIDGET"].retired == {"v1": Retired("0003_drop_v1", "0001_initial", "deleted")}
    assert applied({}, [change("v1", "v1")], "0004") == {}  # a template change at the same version


def test_recording_twice_is_harmless_and_other_entity_types_stay() -> None:
    once = applied({}, [change("v1", "v2"), change("v3", "v4", etype="GADGET")], "0002")
    twice = applied(decode(encode(once)), [change("v1", "v2"), change("v3", "v4", etype="GADGET")], "0002")
    assert twice == once and set(once) == {"WIDGET", "GADGET"}


def test_a_reversal_releases_the_old_version_when_it_starts_and_retires_the_new_one_when_done() -> None:
    entries = applied({}, [change("v1", "v2")], "0002")
    started = reversal_started(decode(encode(entries)), [change("v1", "v2")], "0002")
    assert started["WIDGET"].retired == {}  # both live while items move back
    done = unrecorded(started, [change("v1", "v2")], "0002", reversed_done=True)
    assert done["WIDGET"].version == "v1"
    assert done["WIDGET"].retired == {"v2": Retired("0002", "0001_initial", "reversed")}
    again = applied(done, [change("v1", "v2")], "0002")  # applied again after the reversal
    assert again["WIDGET"].version == "v2" and set(again["WIDGET"].retired) == {"v1"}


def test_a_copy_mode_reversal_retires_nothing_and_fake_only_releases() -> None:
    entries = applied({}, [change("v1", "v2")], "0002")
    copy_back = unrecorded(reversal_started(entries, [change("v1", "v2", retires=False)], "0002"),
                           [change("v1", "v2", retires=False)], "0002", reversed_done=True)
    assert copy_back["WIDGET"].retired == {} and copy_back["WIDGET"].version == "v1"
    fake = unrecorded(applied({}, [change("v1", "v2")], "0002"), [change("v1", "v2")], "0002", reversed_done=False)
    assert fake["WIDGET"].retired == {} and fake["WIDGET"].version == "v1"


def test_releasing_one_migration_keeps_what_an_earlier_one_retired() -> None:
    entries = applied({}, [change("v1", "v2")], "0002")
    entries = applied(entries, [change("v2", "v3", before="0002")], "0003")
    assert set(entries["WIDGET"].retired) == {"v1", "v2"}
    back = unrecorded(reversal_started(entries, [change("v2", "v3")], "0003"), [change("v2", "v3")], "0003",
                      reversed_done=True)
    assert back["WIDGET"].version == "v2" and set(back["WIDGET"].retired) == {"v1", "v3"}
    assert back["WIDGET"].retired["v1"].migration == "0002"


def test_the_record_round_trips_and_a_foreign_item_reads_as_none() -> None:
    entries = applied({}, [change("v1", "v2")], "0002")
    assert decode({**keyversions.item_key("PK", "SK"), **encode(entries)}) == entries
    assert decode(None) == {} and decode({"entities": {"S": "not json"}}) == {}
    assert keyversions.item_key("PK", None) == {"PK": {"S": "dynorm#migrations#keyversions"}}


def test_check_key_versions_is_a_yaml_setting(tmp_path: Path) -> None:
    cfg = tmp_path / "dynorm.yaml"
    cfg.write_text("check_key_versions: false\n")
    assert conf.load_file(cfg)["check_key_versions"] is False
    cfg.write_text("check_key_versions: 'no'\n")
    with pytest.raises(ConfigurationError, match="'check_key_versions'.*must be true or false, got 'no'"):
        conf.load_file(cfg)
