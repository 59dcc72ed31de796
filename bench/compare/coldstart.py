"""Cold starts as whole processes: each library's ``cold.py`` run, interleaved, several times.

A cold start is what an AWS Lambda function pays on its first invocation: start the
interpreter, import the library, declare the model, send one GetItem. Each run is a fresh
process in an empty working directory (no ``dynorm.yaml`` to read) whose environment holds the
credentials, as Lambda's does (``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``: DynamoDB Local's
throwaway keys; a library that resolves credentials finds them there, as on Lambda, instead of
walking on to the instance-metadata service); its wall time is taken
around the process and its CPU time from the operating system's accounting of it
(``os.wait4``: user + system). Runs go A B C D, A B C D, ... (the order rotating), after one
warm-up run each, so the operating system's file cache is warm for all.
"""

from __future__ import annotations

import compileall
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = Path(__file__).with_name("cold.py")
KEY_ID = SECRET = "dynormlocal"  # DynamoDB Local's throwaway credentials (as in cold.py)


def one(spec: str, endpoint: str, table: str, cwd: str) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one cold start of ``spec`` (``cold.py``'s LIBRARY)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DYNORM_", "AWS_"))}
    env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"] = KEY_ID, SECRET  # as Lambda's environment
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, str(CHILD), spec, endpoint, table], cwd=cwd, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode() if proc.stderr else ""
    if proc.stderr:
        proc.stderr.close()
    if proc.returncode:
        raise RuntimeError(f"cold start of {spec} failed (exit {proc.returncode}):\n{err}")
    return wall, usage.ru_utime + usage.ru_stime


def measure(specs: dict[str, str], endpoint: str, table: str, runs: int) -> dict[str, dict[str, list[float]]]:
    """``{name: {"wall": [...], "cpu": [...]}}`` in seconds, ``runs`` interleaved runs of each
    ``specs[name]`` (``cold.py``'s LIBRARY argument)."""
    # deployed code runs from bytecode (pip compiles site-packages); compile dynorm's sources too
    compileall.compile_dir(str(Path(__file__).resolve().parents[2] / "dynorm"), quiet=1)
    names = list(specs)
    out: dict[str, dict[str, list[float]]] = {n: {"wall": [], "cpu": []} for n in names}
    with tempfile.TemporaryDirectory() as cwd:
        for name in names:
            one(specs[name], endpoint, table, cwd)
        for r in range(runs):
            for name in names[r % len(names):] + names[:r % len(names)]:
                wall, cpu = one(specs[name], endpoint, table, cwd)
                out[name]["wall"].append(wall)
                out[name]["cpu"].append(cpu)
    return out
