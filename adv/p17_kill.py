from common import *
import subprocess, signal, time
setup()
child = r'''
import sys, asyncio, os
sys.path.insert(0, "adv")
import common
from common import *
dynorm.configure(table_prefix=sys.argv[1])
async def main():
    sem = asyncio.Semaphore(30)
    async def one(i):
        async with sem:
            await Item.objects.acreate(grp="k", iid=f"{i:04d}")
            print(f"ACK {i:04d}", flush=True)
    async def upd(i):
        async with sem:
            await Ctr.objects.filter(name="kc").aupdate(n=F("n") + 1)
            print("INC", flush=True)
    await asyncio.gather(*(one(i) for i in range(400)), *(upd(i) for i in range(200)))
asyncio.run(main())
'''
try:
    prefix = dynorm.conf.get_settings().table_prefix
    Ctr.objects.create(name="kc")
    for sig in (signal.SIGINT, signal.SIGKILL):
        p = subprocess.Popen([sys.executable, "-c", child, prefix], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        time.sleep(3.0)
        p.send_signal(sig)
        out, err = p.communicate(timeout=60)
        acks = {l.split()[1] for l in out.splitlines() if l.startswith("ACK")}
        incs = sum(1 for l in out.splitlines() if l.startswith("INC"))
        raw = {i["SK"]["S"][5:] for i in raw_all() if i["PK"]["S"].endswith("GRP#k")}
        n = Ctr.objects.get(name="kc").n
        report(acks <= raw, f"{sig.name} mid 400 acreates: {len(acks)} acked, {len(raw)} stored", f"acked but missing {sorted(acks - raw)[:5]}")
        report(n >= incs, f"{sig.name} mid F()+1 aupdates: {incs} acked, counter {n}", f"acked {incs} > stored {n}")
        for i in raw_all():
            if i["PK"]["S"].endswith("GRP#k"):
                dynorm.backend.call("DeleteItem", {"TableName": T.table_name(), "Key": {"PK": i["PK"], "SK": i["SK"]}})
        Ctr.objects.filter(name="kc").update(n=0)
        if sig == signal.SIGINT: print("NOTE SIGINT stderr tail:", err.strip().splitlines()[-1:] if err.strip() else None)
finally:
    teardown()
