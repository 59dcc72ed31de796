import os, sys, json, subprocess, time, tempfile, threading, http.server, uuid
os.environ.setdefault("DYNORM_ENDPOINT", "http://127.0.0.1:8612")
from pathlib import Path
import dynorm
from dynorm import conf
def p(ok, what, detail=""):
    print(("SAFE: " if ok else "BUG: ") + what + ("" if ok else f" ({detail})"))

# 1. is_local on hostnames
for ep, exp in [("http://127.example.com:8000", False), ("http://127.0.0.1.evil.example:8000", False),
                ("http://localhost:8000", True), ("http://[::1]:8000", True), ("http://LOCALHOST:8000", True),
                ("http://127.0.0.2:8000", True), ("https://localhost/", True), ("http://0.0.0.0:8000", None),
                ("http://127.0.0.1@evil.example/", False)]:
    got = conf.Settings(endpoint=ep).is_local
    if exp is None: print(f"   is_local({ep}) = {got}")
    else: p(got == exp, f"is_local({ep})", f"expected {exp}, got {got}")

# 2. stop_recorded kills unrelated pid
from dynorm.local import stop_recorded
victim = subprocess.Popen(["sleep", "30"])
d = Path(tempfile.mkdtemp()); st = d / "server.json"
st.write_text(json.dumps({"pid": victim.pid, "port": 8999, "endpoint": "http://127.0.0.1:8999"}))
r = stop_recorded(st)
time.sleep(0.3)
alive = victim.poll() is None
p(alive, "dynorm local stop with a stale server.json (pid reused) leaves unrelated process alone",
  f"expected sleep pid {victim.pid} alive, got killed (stop_recorded returned {r})")
if alive: victim.kill()

# 3. non-DynamoDB servers answering 204 / 200 without content-type / 200 json {}
class H(http.server.BaseHTTPRequestHandler):
    mode = "204"
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        m = type(self).mode
        if m == "204":
            self.send_response(204); self.end_headers()
        elif m == "200-noctype":
            self.send_response(200); self.send_header("Content-Length", "0"); self.end_headers()
        elif m == "200-json":
            body = b"{}"; self.send_response(200); self.send_header("Content-Type", "application/json"); self.send_header("Content-Length", "2"); self.end_headers(); self.wfile.write(body)
    def log_message(self, *a): pass
srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
threading.Thread(target=srv.serve_forever, daemon=True).start()
port = srv.server_address[1]
from dynorm import Entity, Table, fields
class T(Table):
    class Meta: table_name = "advinfra"
class Thing(Entity):
    tid = fields.String()
    class Meta:
        table = T; pk = "T#{tid}"; sk = "T"
dynorm.configure(endpoint=f"http://127.0.0.1:{port}")
for mode in ["204", "200-noctype", "200-json"]:
    H.mode = mode
    try:
        Thing(tid="a").save()
        p(False, f"save() against a non-DynamoDB server answering {mode}", "expected an error, got success (acknowledged write that is nowhere)")
    except dynorm.DynormError as e:
        p(True, f"save() vs non-DynamoDB {mode}: {type(e).__name__}: {str(e)[:90]}")
    try:
        Thing.objects.get(tid="a"); p(False, f"get vs {mode}", "found?")
    except Thing.DoesNotExist:
        p(False, f"get() against a non-DynamoDB server answering {mode}", "expected a 'not DynamoDB' error, got DoesNotExist")
    except dynorm.DynormError as e:
        p(True, f"get() vs non-DynamoDB {mode}: {type(e).__name__}")
srv.shutdown()
