"""Signals against `dynorm migrate` processes: during a backwards migration, twice, re-run while exiting, kill -9."""
import os, sys, tempfile, subprocess, signal, time
from pathlib import Path
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
EP = os.environ.get("DYNORM_ENDPOINT", "http://127.0.0.1:8437")
import dynorm
dynorm.configure(endpoint=EP, table_prefix="advsig-")
from tests.migproject import Project, V2, load_v1, widgets, body, scan_all
from dynorm.migrations.executor import MigrateOptions

N = int(os.environ.get("N", "3000"))
root = Path(tempfile.mkdtemp())
proj = Project(root, "advsigproj")
PY = str(REPO / ".venv/bin/python")

def cli(*args):
    env = dict(os.environ, PYTHONPATH=f"{root}:{REPO}", DYNORM_ENDPOINT=EP)
    return subprocess.Popen([PY, "-m", "dynorm", "--config", str(cfg), "migrate", *args], cwd=root, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

def state():
    items = widgets(proj.table)
    v1 = sum(i["PK"]["S"].startswith("v1#") for i in items)
    return len(items), v1, {i["widget_id"]["S"]: body(i) for i in items}

def locks():
    return [i["SK"]["S"] for i in scan_all(proj.table) if i["PK"]["S"] == "dynorm#migrations" and i["SK"]["S"].startswith("lock#")]

def wait_started(p, secs):
    time.sleep(secs)

try:
    load_v1(proj, N)
    _, _, before = state()
    proj.write_models(**V2)
    proj.makemigrations()
    cfg = proj.config()
    r = subprocess.run([PY, "-m", "dynorm", "--config", str(cfg), "migrate", "--segments", "2"], cwd=root,
                       env=dict(os.environ, PYTHONPATH=f"{root}:{REPO}", DYNORM_ENDPOINT=EP), capture_output=True, text=True, timeout=300)
    print("forward rc", r.returncode, r.stdout.strip().splitlines()[-2:])
    # (a) SIGINT during a backwards migration
    p = cli("0001", "--segments", "2")
    time.sleep(3.0)
    t0 = time.monotonic(); p.send_signal(signal.SIGINT); out, _ = p.communicate(timeout=60); lag = time.monotonic() - t0
    n, v1, _ = state()
    print(f"(a) rc={p.returncode} lag={lag:.2f}s items={n} at_v1={v1} locks={locks()}")
    print(("SAFE" if p.returncode == 130 and not locks() and n == N else "BUG") + f": SIGINT during backwards migration (rc {p.returncode}, {lag:.2f}s, items {n}/{N})")
    if p.returncode != 130: print(out[-1500:])
    # (b) SIGINT twice in a row
    p = cli("0001", "--segments", "2")
    time.sleep(3.0)
    p.send_signal(signal.SIGINT); time.sleep(0.05); p.send_signal(signal.SIGINT)
    out, _ = p.communicate(timeout=60)
    n, v1, _ = state()
    print(("SAFE" if p.returncode == 130 and not locks() and n == N else "BUG") + f": SIGINT twice (rc {p.returncode}, items {n}/{N}, locks {locks()})")
    if p.returncode != 130: print(out[-1500:])
    # (c) SIGTERM then immediate re-run while the first is still exiting
    p = cli("0001", "--segments", "2")
    time.sleep(3.0)
    p.send_signal(signal.SIGTERM)
    q = cli("0001", "--segments", "2")
    out_p, _ = p.communicate(timeout=60); out_q, _ = q.communicate(timeout=300)
    n, v1, _ = state()
    print(f"(c) first rc={p.returncode} second rc={q.returncode} items={n} v1={v1} locks={locks()}")
    print(("SAFE" if p.returncode == 143 and q.returncode in (0, 1) and n == N else "BUG") + ": SIGTERM then immediate re-run")
    if q.returncode not in (0,): print(out_q[-800:])
    # (d) kill -9 during the reverse, then resume with --force-unlock
    p = cli("0001", "--segments", "2")
    time.sleep(2.0)
    os.kill(p.pid, signal.SIGKILL); p.communicate(timeout=30)
    n, v1, _ = state()
    print(f"(d) after kill -9: items={n} v1={v1} locks={locks()}")
    r = subprocess.run([PY, "-m", "dynorm", "--config", str(cfg), "migrate", "0001", "--segments", "2", "--force-unlock", "--yes"], cwd=root,
                       env=dict(os.environ, PYTHONPATH=f"{root}:{REPO}", DYNORM_ENDPOINT=EP), capture_output=True, text=True, timeout=300)
    n, v1, after = state()
    ok = r.returncode == 0 and n == N and v1 == N and after == before
    print(("SAFE" if ok else "BUG") + f": kill -9 during backwards then resume (rc {r.returncode}, items {n}, at v1 {v1}, bodies equal {after == before})")
    if not ok: print(r.stdout[-1500:], r.stderr[-1500:])
    # (e) forward again after the reverse: no duplicates, nothing lost
    r = subprocess.run([PY, "-m", "dynorm", "--config", str(cfg), "migrate", "--segments", "2"], cwd=root,
                       env=dict(os.environ, PYTHONPATH=f"{root}:{REPO}", DYNORM_ENDPOINT=EP), capture_output=True, text=True, timeout=300)
    n, v1, after = state()
    ok = r.returncode == 0 and n == N and v1 == 0 and after == before
    print(("SAFE" if ok else "BUG") + f": forward again after reverse (rc {r.returncode}, items {n}, at v1 {v1}, bodies equal {after == before})")
finally:
    proj.cleanup()
