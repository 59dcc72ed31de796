import os, subprocess, sys
EP = "http://127.0.0.1:8612"
code = r'''
import dynorm
from dynorm import Entity, Table, fields
class T(Table):
    class Meta: table_name = "advcreds"
class Thing(Entity):
    tid = fields.String()
    class Meta:
        table = T; pk = "T#{tid}"; sk = "T"
try:
    T.create_table(exist_ok=True)
    Thing(tid="a").save(); print("OK", Thing.objects.get(tid="a"))
except Exception as e:
    print("ERR", type(e).__module__, type(e).__name__, str(e)[:300].replace("\n","\\n"))
'''
base = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
base["HOME"] = "/tmp/advhome"; os.makedirs("/tmp/advhome", exist_ok=True)
cases = {
 "no creds": {},
 "AWS_PROFILE missing": {"AWS_PROFILE": "nosuch"},
 "key with underscore": {"AWS_ACCESS_KEY_ID": "fake_key", "AWS_SECRET_ACCESS_KEY": "fake_secret"},
 "key 'test'": {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test"},
 "empty key": {"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": ""},
 "only key id": {"AWS_ACCESS_KEY_ID": "abc"},
}
for name, env in cases.items():
    for ep in (EP, "http://localhost:8612"):
        e = dict(base, DYNORM_ENDPOINT=ep, **env)
        out = subprocess.run([sys.executable, "-c", code], env=e, capture_output=True, text=True, timeout=60)
        print(f"{name:22} {ep:24} ->", (out.stdout.strip() or out.stderr.strip().splitlines()[-1])[:250])
