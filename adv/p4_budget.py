"""--max-wcu with an external scheduler: workers present at start vs joining just after the start."""
from clihelp import *
import distributed
from dynorm import backend
N = 1500; BUDGET = 600.0

def count_v2(p):
    n = 0; params = {"TableName": p.table.table_name(), "Select": "COUNT", "ConsistentRead": True,
                     "FilterExpression": "begins_with(PK, :p)", "ExpressionAttributeValues": {":p": {"S": "v2#W#"}}}
    while True:
        r = backend.call("Scan", params); n += r["Count"]
        if "LastEvaluatedKey" not in r: return n
        params["ExclusiveStartKey"] = r["LastEvaluatedKey"]

def main():
    for start_workers in (3, 0):
        p = new_project(f"budget{start_workers}")
        try:
            load_v1(p, N); p.write_models(**V2); p.makemigrations()
            with distributed.LocalCluster(n_workers=start_workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                                          dashboard_address="127.0.0.1:0", silence_logs=40) as cluster:
                proc = subprocess.Popen(cmd(p, "--executor", "dask", "--scheduler", cluster.scheduler_address,
                                            "--max-wcu", str(BUDGET), "--json"), env=cli_env(p), cwd=p.root,
                                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
                if start_workers == 0:
                    time.sleep(4); cluster.scale(3)
                samples = []; t0 = time.monotonic()
                while proc.poll() is None and time.monotonic() - t0 < 240:
                    samples.append((time.monotonic(), count_v2(p))); time.sleep(1.0)
                rc = proc.wait(timeout=60)
                out = proc.stdout.read()
            samples.append((time.monotonic(), count_v2(p)))
            moving = [(t, c) for t, c in samples if 0 < c]
            rates = []
            for (t1, c1), (t2, c2) in zip(samples, samples[1:]):
                rates.append((c2 - c1) * 6 / (t2 - t1))
            peak = max(rates); first = next(t for t, c in samples if c > 0); last = next(t for t, c in samples if c == N) if samples[-1][1] == N else samples[-1][0]
            # window rate over the whole move: (N*6) / duration
            avg = N * 6 / max(0.1, last - first)
            print(f"   start_workers={start_workers} rc={rc} peak~{peak:.0f} WCU/s over ~1s windows, avg~{avg:.0f} WCU/s, move took {last-first:.1f}s")
            say(avg <= BUDGET * 1.25 and peak <= BUDGET * 2.2, f"--max-wcu {BUDGET:g} with {start_workers} workers at start (3 in the end): avg {avg:.0f} WCU/s, peak {peak:.0f}")
        finally:
            p.cleanup()
    print("   procs now:", dask_procs()[:5])

if __name__ == '__main__':
    main()
