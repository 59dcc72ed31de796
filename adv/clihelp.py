import os, subprocess, sys, time, signal
from common import *
REPO = str(Path(__file__).resolve().parents[1])

def cli_env(p):
    return {**os.environ, "PYTHONPATH": f"{p.root}{os.pathsep}{REPO}"}

def cmd(p, *args):
    return [sys.executable, "-m", "dynorm", "--config", str(p.config()), "migrate", *args]

def run(p, *args, timeout=300):
    t = time.monotonic()
    r = subprocess.run(cmd(p, *args), env=cli_env(p), cwd=p.root, capture_output=True, text=True, timeout=timeout)
    return r.returncode, r.stdout, r.stderr, time.monotonic() - t

def group_alive(pgid):
    out = subprocess.run(["ps", "-o", "pid=,pgid=,args=", "-e"], capture_output=True, text=True).stdout
    return [l for l in out.splitlines() if l.split()[1] == str(pgid) and l.split()[0] != str(pgid)]

def dask_procs():
    out = subprocess.run(["ps", "-o", "pid=,ppid=,args=", "-u", str(os.getuid())], capture_output=True, text=True).stdout
    return [l for l in out.splitlines() if ("distributed" in l or "dask" in l or "spawn_main" in l or "forkserver" in l) and "ps -o" not in l]

def state(p):
    ws = widgets(p.table)
    keys = [(i["PK"]["S"], i["SK"]["S"]) for i in ws]
    ids = [i["widget_id"]["S"] for i in ws]
    led = [i["SK"]["S"] for i in scan_all(p.table) if i["PK"]["S"] == "dynorm#migrations"]
    return ws, ids, led
