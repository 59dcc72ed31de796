"""A migration [RekeyEntity, RunPython(fails)] via the CLI: exit code, lock, showmigrations, re-run after the fix."""
import os, sys, tempfile, textwrap, subprocess
from pathlib import Path
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
EP = os.environ.get("DYNORM_ENDPOINT", "http://127.0.0.1:8437")
import dynorm
dynorm.configure(endpoint=EP, table_prefix="advrp-")
from tests.migproject import Project, V2, load_v1, widgets, scan_all
root = Path(tempfile.mkdtemp())
proj = Project(root, "advrpproj")
PY = str(REPO / ".venv/bin/python")
def cli(*a):
    return subprocess.run([PY, "-m", "dynorm", "--config", str(cfg), *a], cwd=root, capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=f"{root}:{REPO}", DYNORM_ENDPOINT=EP), timeout=300)
try:
    load_v1(proj, 200)
    proj.write_models(**V2); r = proj.makemigrations()
    mig = proj.dir / "migrations" / f"{r.name}.py"
    src = mig.read_text().replace("operations = [", "import os\ndef tag(ctx):\n    if not os.path.exists(%r):\n        raise RuntimeError('half-way boom')\n\noperations = [ops.RunPython(tag),\n" % str(root / "fixed"), 1)
    mig.write_text(src)
    cfg = proj.config()
    r1 = cli("migrate")
    locks = [i["SK"]["S"] for i in scan_all(proj.table) if i["PK"]["S"] == "dynorm#migrations" and i["SK"]["S"].startswith(("lock#", "applied#0002"))]
    print(("SAFE" if r1.returncode != 0 and not locks else "BUG") + f": RunPython failing first: exit {r1.returncode}, lock/applied left {locks}")
    # now put the failing RunPython AFTER the rekey
    src = mig.read_text().replace("operations = [ops.RunPython(tag),\n", "operations = [\n", 1)
    src = src.rstrip().rstrip("]") + "    ops.RunPython(tag),\n]\n"
    mig.write_text(src)
    r2 = cli("migrate")
    v2 = sum(i["PK"]["S"].startswith("v2#") for i in widgets(proj.table))
    sm = cli("showmigrations").stdout
    print(("SAFE" if r2.returncode != 0 else "BUG") + f": RunPython failing after the rekey: exit {r2.returncode}, items at v2 {v2}/200; showmigrations: {[l for l in sm.splitlines() if '0002' in l]}")
    (root / "fixed").write_text("")
    r3 = cli("migrate")
    n = widgets(proj.table)
    ok = r3.returncode == 0 and len(n) == 200 and all(i["PK"]["S"].startswith("v2#") for i in n)
    print(("SAFE" if ok else "BUG") + f": re-run after fixing RunPython finishes (exit {r3.returncode}, {len(n)} items) {r3.stdout.strip().splitlines()[-2:]}")
finally:
    proj.cleanup()
