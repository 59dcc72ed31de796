"""--max-wcu N: WCU sent in any 1-second window (by the pacer's own per-item estimate) vs N plus one second of burst."""
import os, sys, tempfile, time, json, threading
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import dynorm
from dynorm import backend
dynorm.configure(endpoint=os.environ.get("DYNORM_ENDPOINT", "http://127.0.0.1:8437"), table_prefix="advpace-")
from tests.migproject import Project, V2, load_v1, widgets
from dynorm.migrations.executor import MigrateOptions
from dynorm.migrations import cost

N = float(os.environ.get("MAXWCU", "40"))
proj = Project(Path(tempfile.mkdtemp()), "advpaceproj")
try:
    load_v1(proj, 120)
    proj.write_models(**V2); proj.makemigrations()
    sends = []
    orig = cost.Pacer.before_write
    def spy(self, units):
        ok = orig(self, units)
        sends.append((time.monotonic(), units))
        return ok
    cost.Pacer.before_write = spy
    t0 = time.monotonic()
    rep = proj.executor().migrate(MigrateOptions(segments=2, max_wcu=N))
    el = time.monotonic() - t0
    cost.Pacer.before_write = orig
    total = sum(u for _, u in sends)
    worst = max(sum(u for t, u in sends if s <= t < s + 1.0) for s, _ in sends)
    print(f"max_wcu={N}: {len(sends)} sends, total {total} WCU in {el:.1f}s (avg {total/el:.1f}/s), worst 1-s window {worst}, biggest send {max(u for _, u in sends)}")
    print(("SAFE" if worst <= 2 * N else "BUG") + f": --max-wcu {N} worst 1-second window (expected <= {2*N} = rate + 1 s burst, got {worst})")
finally:
    proj.cleanup()
