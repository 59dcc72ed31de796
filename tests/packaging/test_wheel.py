"""The package as a user gets it (issue 12, section 3): `python -m build` makes an sdist and a wheel
that pass `twine check`; the wheel, installed into a fresh virtualenv, runs `dynorm --help`,
`dynorm local start`, the README quick start and `dynorm local stop`.

Slow by nature (a build and a pip install: ~60 s here), bounded by timeouts on every step.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from dynorm.local import find_jar
from tests.integration.test_user_habits import readme_quick_start

ROOT = Path(__file__).resolve().parents[2]


def sh(*cmd: str | Path, cwd: Path, env: dict[str, str] | None = None, timeout: float = 300) -> str:
    proc = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{' '.join(map(str, cmd))} exited {proc.returncode}:\n{proc.stdout[-3000:]}\n" \
                                 f"{proc.stderr[-3000:]}"
    return proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    sh(sys.executable, "-m", "build", "--sdist", "--wheel", "--outdir", out, ROOT, cwd=ROOT, timeout=400)
    return out


@pytest.mark.slow(reason="builds an sdist and a wheel (20 s)")
def test_build_makes_an_sdist_and_a_wheel_that_twine_accepts(dist: Path) -> None:
    wheels, sdists = list(dist.glob("dynorm-*.whl")), list(dist.glob("dynorm-*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1
    out = sh(sys.executable, "-m", "twine", "check", "--strict", *wheels, *sdists, cwd=dist)
    assert out.count("PASSED") == 2
    import tarfile
    import zipfile

    names = zipfile.ZipFile(wheels[0]).namelist()
    assert "dynorm/py.typed" in names and "dynorm/cli/confirm.py" in names
    assert not any(n.startswith(("tests/", "demo_project/")) for n in names)
    meta = zipfile.ZipFile(wheels[0]).read(next(n for n in names if n.endswith("METADATA"))).decode()
    assert "Requires-Dist: pynamodb<7,>=6.0" in meta or "Requires-Dist: pynamodb>=6.0,<7" in meta
    assert "Provides-Extra: moto" in meta
    assert any(n.endswith("CHANGELOG.md") for n in tarfile.open(sdists[0]).getnames())


@pytest.mark.slow(reason="installs the wheel into a fresh virtualenv and starts DynamoDB Local from it (60-80 s)")
def test_the_wheel_in_a_fresh_virtualenv_runs_the_readme_quick_start(dist: Path, tmp_path: Path) -> None:
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    bin_dir = env_dir / "bin"
    wheel = next(dist.glob("dynorm-*.whl"))
    sh(bin_dir / "python", "-m", "pip", "install", "-q", "--disable-pip-version-check", wheel,
       cwd=tmp_path, timeout=400)
    work = tmp_path / "app"  # outside the repository: no Makefile, no dynorm.yaml
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DYNORM_", "VIRTUAL_ENV", "PYTHON"))}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    env["DYNAMODB_LOCAL_JAR"] = str(find_jar(ROOT))  # no npm download in the test
    # a new user's machine: no DynamoDB Local recorded by another checkout or test run on this one
    env["DYNORM_STATE_DIR"] = str(tmp_path / "state")
    out = sh(bin_dir / "dynorm", "--help", cwd=work, env=env, timeout=60)
    assert "local" in out and "migrate" in out
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = sh(bin_dir / "dynorm", "local", "start", "--port", str(port), cwd=work, env=env, timeout=120)
    try:
        assert f"http://127.0.0.1:{port}" in out
        (work / "quickstart.py").write_text(readme_quick_start())
        run_env = {**env, "DYNORM_ENDPOINT": f"http://127.0.0.1:{port}"}
        for run in (1, 2):
            out = sh(bin_dir / "python", "quickstart.py", cwd=work, env=run_env, timeout=120)
            assert out.strip().splitlines()[-1] == str(["Model 3"] * run)
    finally:
        out = sh(bin_dir / "dynorm", "local", "stop", "--port", str(port), cwd=work, env=env, timeout=60)
    assert "stopped" in out
