"""Ctrl-C right after a worker died: the nanny's replacement never got the stop flag."""
from clihelp import *
import threading, distributed
from dynorm.migrations.dask_executor import DaskExecutor
from dynorm.migrations.executor import MigrateOptions, MigrationInterrupted
from dynorm.migrations.loader import load_migrations
N = 1200
def v2(p): return sum(i["PK"]["S"].startswith("v2#") for i in widgets(p.table))
def main():
    p = new_project("stopdeath")
    try:
        load_v1(p, N); p.write_models(**V2); p.makemigrations()
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                      dashboard_address="127.0.0.1:0", silence_logs=40) as cluster, \
                distributed.Client(cluster, timeout=60) as client:
            client.wait_for_workers(2, timeout=120)
            pids = client.run(os.getpid); stop = threading.Event(); killed = {}
            def reporter(label, counts, seconds, final):
                if killed or final or counts["rewritten"] < 60: return
                busy = [a for a, k in client.processing().items() if k and a in pids]
                if busy:
                    os.kill(pids[busy[0]], signal.SIGKILL); killed["t"] = time.monotonic(); stop.set()
            ex = DaskExecutor(load_migrations(p.migrations), reporter=reporter, client=client)
            t0 = time.monotonic()
            try:
                ex.migrate(MigrateOptions(segments=8, max_wcu=120, stop=stop)); res = "finished"
            except MigrationInterrupted:
                res = "interrupted"
            took = time.monotonic() - killed.get("t", t0)
            at_return = v2(p); time.sleep(12); later = v2(p)
            led = [i["SK"]["S"] for i in scan_all(p.table) if i["PK"]["S"] == "dynorm#migrations" and i["SK"]["S"].startswith("lock#")]
            say(took < 5, f"stop right after a worker death: driver returned ({res}) {took:.1f}s after the stop (docs: ~0.5 s)")
            say(later == at_return, f"no writes after the driver returned and released the lock (lock items now {led}): v2 {at_return} -> {later} 12 s later")
    finally:
        p.cleanup()
    print("   procs:", dask_procs()[:4])
if __name__ == "__main__":
    main()
