"""--scheduler pointing at things that are not a scheduler."""
from clihelp import *
p = new_project("sched")
try:
    load_v1(p, 50); p.write_models(**V2); p.makemigrations()
    for addr in ["tcp://127.0.0.1:8615", "http://127.0.0.1:8615", "127.0.0.1:8615", "tcp://nonexistent.invalid:8786",
                 "", "tcp://127.0.0.1:99999", "garbage://x"]:
        before = dask_procs()
        try:
            rc, out, err, secs = run(p, "--executor", "dask", "--scheduler", addr, timeout=150)
        except subprocess.TimeoutExpired:
            say(False, f"--scheduler {addr!r}: hung > 150 s (expected a one-line error)"); continue
        ws, ids, led = state(p)
        moved = sum(i["PK"]["S"].startswith("v2#") for i in ws)
        last = (err.strip().splitlines() or [""])[-1][:200]
        lock = [l for l in led if l.startswith("lock#")]
        ok = rc == 1 and moved == 0 and not lock and "Traceback" not in err and len(err.strip().splitlines()) <= 3
        say(ok, f"--scheduler {addr!r}: rc={rc} {secs:.0f}s moved={moved} lock={lock} lines={len(err.strip().splitlines())} err={last!r}")
    leftover = dask_procs()
    print("   procs:", leftover[:5])
finally:
    p.cleanup()
