"""Probe: v1 app (queryset F increments, never stops) and v2 app (read_versions, instance increments) during a
move; acknowledged increments per item == stored counter, nothing left at v1, nothing duplicated."""
from __future__ import annotations

import collections
import threading
import time
from typing import Any

import pytest

import dynorm
from dynorm.migrations.executor import MigrateOptions
from tests.migproject import UNVERSIONED, V1, V2, Project, load_v1, widgets


def report(ok: bool, what: str, detail: Any = "") -> None:
    print(("SAFE: " if ok else "BUG: ") + what + (f" ({detail})" if not ok else ""))


@pytest.mark.parametrize("vf", ["versioned", "unversioned"])
def test_probe_load(project: Project, vf: str) -> None:
    import importlib
    import shutil
    import sys
    extra = {} if vf == "versioned" else {"version_field": UNVERSIONED}
    load_v1(project, 80, **extra)
    project.write_models(**{**V2, **extra})
    project.makemigrations()
    v1 = project.write_models(**{**V1, **extra})
    # a second module for the v2 app, so both versions live in one process
    (project.dir / "models_v2.py").write_text((project.dir / "models.py").read_text()
                                             .replace('key_version = "v1"', 'key_version = "v2"')
                                             .replace("read_versions = None", "read_versions = ['v2', 'v1']")
                                             .replace('"W#{widget_id}"', '"S#{size:04d}#W#{widget_id}"'))
    print("note v2 src ok:", "v2" in (project.dir / "models_v2.py").read_text())
    acked: collections.Counter[str] = collections.Counter()
    lock = threading.Lock()
    stop = threading.Event()
    errors: collections.Counter[str] = collections.Counter()

    def v1_app(seed: int) -> None:
        i = seed
        t_end = time.monotonic() + 40
        while not stop.is_set() and time.monotonic() < t_end:
            wid = f"w{(i * 7) % 80:05d}"
            i += 1
            try:
                n = v1.Widget.objects.filter(widget_id=wid).update(counter=dynorm.F("counter") + 1)
                if n:
                    with lock:
                        acked[wid] += 1
            except Exception as exc:  # noqa: BLE001
                errors[type(exc).__name__] += 1

    threads = [threading.Thread(target=v1_app, args=(s,)) for s in range(2)]
    for t in threads:
        t.start()
    time.sleep(0.5)
    err = None
    try:
        rep = project.executor().migrate(MigrateOptions(segments=2, max_wcu=60))
        print("note:", rep.applied, rep.partial, [(o.catch_up_passes, o.caught_up) for o in rep.operations])
    except Exception as exc:  # noqa: BLE001
        err = exc
    stop.set()
    for t in threads:
        t.join()
    items = widgets(project.table)
    by = collections.defaultdict(list)
    for i in items:
        by[i["widget_id"]["S"]].append(i)
    dup = [k for k, v in by.items() if len(v) > 1]
    at1 = [k for k, v in by.items() if any(x["PK"]["S"].startswith("v1#") for x in v)]
    wrong = [(k, int(v[0]["counter"]["N"]), acked[k]) for k, v in by.items() if int(v[0]["counter"]["N"]) != acked[k]]
    print("note: acked", sum(acked.values()), "errors", dict(errors), "err", err)
    report(not dup and len(by) == 80, f"[{vf}] no duplicates / all present", (dup[:3], len(by)))
    report(not wrong, f"[{vf}] counters == acknowledged increments", wrong[:5])
    report(not at1 or err is not None, f"[{vf}] nothing left at v1 when applied", at1[:5])
