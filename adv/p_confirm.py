import os, sys, uuid
sys.path.insert(0, "/tmp/advproj")
os.environ["DYNORM_ENDPOINT"] = "http://127.0.0.1:8612"
from click.testing import CliRunner
import dynorm
from dynorm import conf, capture
from dynorm.cli import cli
import advmodels
conf.Settings.is_local = property(lambda self: False)   # stand-in: pretend 127.0.0.1:8612 is remote
advmodels.Notes.Meta.table_name = advmodels.Notes._meta.table_name = f"advconf-{uuid.uuid4().hex[:6]}"
def p(ok, what, detail=""):
    print(("SAFE: " if ok else "BUG: ") + what + ("" if ok else f" ({detail})"))
with capture() as c:
    r = CliRunner().invoke(cli, ["migrate"])
p(r.exit_code != 0 and "refusing" in r.output and not any(o in ("CreateTable", "UpdateTable") for o in c.operations), "non-TTY migrate without --yes refuses before writing", f"{r.exit_code} {r.output[-200:]} {c.operations}")
with capture() as c:
    r = CliRunner().invoke(cli, ["migrate", "--plan"])
p(r.exit_code == 0 and "CreateTable" not in c.operations, "migrate --plan needs no confirmation, writes nothing", f"{r.output[-200:]} {c.operations}")
with capture() as c:
    r = CliRunner().invoke(cli, ["migrate", "--yes"])
p(r.exit_code == 0 and "CreateTable" in c.operations, "migrate --yes goes ahead", f"{r.exit_code} {r.output[-200:]}")
with capture() as c:
    r = CliRunner().invoke(cli, ["migrate"], input="n\n")
print("   declined via input:", r.exit_code, r.output.strip().splitlines()[-1][:100])
dynorm.backend.call("DeleteTable", {"TableName": advmodels.Notes.table_name()})
