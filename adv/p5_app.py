"""Concurrent app writes during a dask move (CLI subprocess, 2 local workers) + a second driver at once."""
from clihelp import *
import random, threading
from dynorm import F

N = 1500
def main():
    p = new_project("app")
    try:
        load_v1(p, N)
        m = p.write_models(**{**V2, "read_versions": ["v2", "v1"]})
        p.makemigrations()
        proc = subprocess.Popen(cmd(p, "--executor", "dask", "--dask-workers", "2", "--json", "--max-wcu", "2500"),
                                env=cli_env(p), cwd=p.root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)
        acked = {}; created = []; deleted = []; errors = []
        stop = threading.Event()
        def app(seed):
            rnd = random.Random(seed); k = 0
            while not stop.is_set() and k < 400:
                k += 1
                wid = f"w{rnd.randrange(N):05d}"
                try:
                    if rnd.random() < 0.1:
                        nid = f"new{seed}_{k}"; m.Widget.objects.create(widget_id=nid, maker="app", size=1); created.append(nid)
                    else:
                        m.Widget.objects.filter(widget_id=wid).update(counter=F("counter") + 1)
                        acked[wid] = acked.get(wid, 0) + 1  # per-thread dict writes: fine under GIL
                except Exception as e:
                    errors.append(repr(e)[:120])
        for line in proc.stderr:
            if '"event": "progress"' in line and '"rewritten": 0,' not in line:
                break
        ts = [threading.Thread(target=app, args=(s,)) for s in range(3)]
        for t in ts: t.start()
        rc2, out2, err2, _ = run(p, "--json", timeout=120)
        say(rc2 != 0 and "lock" in err2.lower(), f"plain driver while a dask driver runs: rc={rc2} {err2.strip().splitlines()[-1:]}")
        rc = proc.wait(timeout=600); stop.set()
        for t in ts: t.join()
        err = proc.stderr.read()
        say(rc == 0, f"dask move under app writes: rc={rc} {err.strip().splitlines()[-1:] if rc else ''}")
        ws = widgets(p.table)
        ids = [i["widget_id"]["S"] for i in ws]
        counters = {i["widget_id"]["S"]: int(i["counter"]["N"]) for i in ws}
        lost = {w: (n, counters.get(w)) for w, n in acked.items() if counters.get(w) != n}
        v1 = [i["PK"]["S"] for i in ws if not i["PK"]["S"].startswith("v2#")]
        say(len(ids) == len(set(ids)) == N + len(created), f"items exactly once: {len(ids)} items, {len(set(ids))} unique, expected {N + len(created)}")
        say(not lost, f"acknowledged increments present ({sum(acked.values())} acked, mismatched {list(lost.items())[:3]})")
        say(not v1, f"all at v2 after the move (left at v1: {v1[:3]})")
        print("   app errors:", len(errors), errors[:3])
    finally:
        p.cleanup()
    print("   procs:", dask_procs()[:4])

if __name__ == "__main__":
    main()
