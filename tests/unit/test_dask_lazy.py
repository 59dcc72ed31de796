"""``import dynorm`` (and its CLI and thread executor) never imports Dask: it is the optional ``dynorm[dask]``."""

from __future__ import annotations

import subprocess
import sys


def test_import_dynorm_does_not_import_dask() -> None:
    code = ("import sys, dynorm, dynorm.cli, dynorm.migrations.executor, dynorm.migrations.verify; "
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')); "
            "print(bad); sys.exit(1 if bad else 0)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_dask_executor_module_imports_dask_only_when_used() -> None:
    code = ("import sys, dynorm.migrations.dask_executor; "
            "sys.exit(1 if 'distributed' in sys.modules else 0)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
