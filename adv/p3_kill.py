"""Driver killed (-9, SIGTERM, SIGINT) mid dask run, then resumed with the other executor."""
from clihelp import *
N = int(os.environ.get("N", "2000"))

def start(p, *args):
    return subprocess.Popen(cmd(p, *args), env=cli_env(p), cwd=p.root, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)

def wait_progress(proc, limit=180):
    t = time.monotonic()
    for line in proc.stderr:
        if '"event": "progress"' in line and '"rewritten": 0,' not in line:
            return True
        if time.monotonic() - t > limit:
            return False
    return False

def check(p, before, tag):
    ws, ids, led = state(p)
    v2 = sum(i["PK"]["S"].startswith("v2#") for i in ws)
    dup = len(ids) - len(set(ids))
    same = {i["widget_id"]["S"]: body(i) for i in ws} == before
    applied = [l for l in led if l.startswith("applied#0002")]
    ok = len(ws) == N and dup == 0 and same and v2 == N and len(applied) == 1
    say(ok, f"{tag}: items={len(ws)} dup={dup} v2={v2} bodies_same={same} applied={len(applied)}")

for sig, first, second in [(signal.SIGKILL, "dask", "threads"), (signal.SIGTERM, "dask", "dask"),
                           (signal.SIGINT, "threads", "dask"), (signal.SIGKILL, "threads", "dask")]:
    p = new_project(f"kill{int(sig)}")
    try:
        load_v1(p, N); before = {i["widget_id"]["S"]: body(i) for i in widgets(p.table)}
        p.write_models(**V2); p.makemigrations()
        a = ["--executor", first, "--json", "--max-wcu", "3000"] + (["--dask-workers", "2"] if first == "dask" else [])
        proc = start(p, *a)
        got = wait_progress(proc)
        time.sleep(0.5)
        if sig == signal.SIGINT:
            os.killpg(proc.pid, sig)  # Ctrl-C in a terminal reaches the whole group
        else:
            proc.send_signal(sig)
        try:
            rc = proc.wait(timeout=90)
        except subprocess.TimeoutExpired:
            rc = "hung"; proc.kill()
        err = proc.stderr.read()
        deadline = time.monotonic() + 60
        while group_alive(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.5)
        left = group_alive(proc.pid)
        expected_rc = {signal.SIGKILL: -9, signal.SIGTERM: 143, signal.SIGINT: 130}[sig]
        say(rc == expected_rc, f"{first} driver {sig.name} mid-run: rc={rc} (expected {expected_rc}) progress_seen={got}")
        say(not left, f"{first} driver {sig.name}: leftover processes of its group after 60 s: {left[:3]}")
        for l in left:
            os.kill(int(l.split()[0]), signal.SIGKILL)
        ws, ids, led = state(p)
        mid_v2 = sum(i["PK"]["S"].startswith("v2#") for i in ws)
        say(len(ws) == N and len(set(ids)) == N, f"{first} {sig.name} mid state: items={len(ws)} unique={len(set(ids))} moved={mid_v2}")
        b = ["--executor", second, "--json"] + (["--dask-workers", "2"] if second == "dask" else []) + (["--force-unlock"] if sig == signal.SIGKILL else [])
        rc2, out, err2, secs = run(p, *b, timeout=400)
        say(rc2 == 0, f"resume with {second} after {first} {sig.name}: rc={rc2} {secs:.0f}s {err2.strip().splitlines()[-1:] if rc2 else ''}")
        check(p, before, f"{first} {sig.name} then {second}")
    finally:
        p.cleanup()
print("   procs now:", dask_procs()[:5])
