"""Adversarial key values moved by the dask executor; --dry-run with dask; --verify exit codes."""
from clihelp import *
from dynorm import backend

IDS = ["a#b", "#", "##", "x$y%z", "é日本", "\U0010ffff", "w0", "w0#", "w00", "", " ", "a" * 300, "1e400", "-0", "v1#W#x"]
def main():
    p = new_project("vals")
    try:
        m = load_v1(p, 100)
        made = []
        for wid in IDS:
            try:
                m.Widget.objects.create(widget_id=wid, maker="m#1", size=7)
                made.append(wid)
            except Exception as e:
                print("   create refused", repr(wid)[:30], type(e).__name__)
        before = {i["widget_id"]["S"]: body(i) for i in widgets(p.table)}
        p.write_models(**V2); name = p.makemigrations().name
        rc, out, err, s = run(p, "--executor", "dask", "--dask-workers", "2", "--dry-run")
        ws, ids, led = state(p)
        say(rc == 0 and all(i["PK"]["S"].startswith("v1#") for i in ws) and not [l for l in led if "0002" in l or l.startswith("lock#")],
            f"dask --dry-run writes nothing: rc={rc} ledger={[l for l in led if '0002' in l or l.startswith('lock#')][:3]}")
        rc, out, err, s = run(p, "--verify", "0002")
        say(rc == 1, f"--verify before the migration: rc={rc} {out.strip().splitlines()[-1:]}")
        rc, out, err, s = run(p, "--executor", "dask", "--dask-workers", "2")
        say(rc == 0, f"dask move with adversarial ids: rc={rc} {err.strip().splitlines()[-2:] if rc else ''}")
        ws, ids, led = state(p)
        after = {i["widget_id"]["S"]: body(i) for i in ws}
        say(after == before and len(ids) == len(set(ids)), f"adversarial ids moved intact: {len(ws)} items, same={after == before}")
        for wid in made:
            try:
                got = m.Widget.objects.get(widget_id=wid) if False else None
            except Exception:
                pass
        m2 = sys.modules[f"{p.pkg}.models"]
        bad = []
        for wid in made:
            try:
                if m2.Widget.objects.get(widget_id=wid).widget_id != wid: bad.append(wid)
            except Exception as e:
                bad.append((wid, type(e).__name__))
        say(not bad, f"get() of every adversarial id at v2: bad={[repr(b)[:30] for b in bad]}")
        rc, out, err, s = run(p, "--verify", "0002")
        say(rc == 0, f"--verify after: rc={rc} {out.strip().splitlines()[:1]}")
        rc, out, err, s = run(p, "--verify", "0002", "--mode", "copy")
        say(rc == 0, f"--verify --mode copy after a move: rc={rc} {out.strip().splitlines()[:1]}")
        rc, out, err, s = run(p, "--verify", "9999")
        say(rc == 1 and "Traceback" not in err, f"--verify unknown: rc={rc} {err.strip().splitlines()[-1:]}")
        rc, out, err, s = run(p, "--verify", "0001")
        say(rc in (0, 1) and "Traceback" not in err, f"--verify of a migration with no rekey: rc={rc} {(out+err).strip().splitlines()[-1:]}")
    finally:
        p.cleanup()
    print("   procs:", dask_procs()[:4])

if __name__ == "__main__":
    main()
