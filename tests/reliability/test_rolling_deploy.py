"""Two versions of one model, in two processes, on one table (issue 9, section 1).

Version B of the app declares ``nickname``; version A does not. A reads B's item and writes it
back through every write path it has; B's ``nickname`` must survive each of them. Each
process imports its own model module (written to a temporary directory), as two deployed
app versions would. On the code before this change, ``save()``, ``update_with_retry()``,
transaction ``save()`` and ``update_or_create()`` dropped ``nickname``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import dynorm
from dynorm import conf

MODEL = '''
from dynorm import Entity, Table, fields

class Shared(Table):
    class Meta:
        table_name = "rolling_deploy"

class User(Entity):
    user_id = fields.String()
    email = fields.String()
    {extra}
    version = fields.Version()

    class Meta:
        table = Shared
        entity_type = "USER"
        pk = "USER#{{user_id}}"
        sk = "PROFILE"

class Note(Entity):  # unversioned
    note_id = fields.String()
    text = fields.String()
    {extra}

    class Meta:
        table = Shared
        entity_type = "NOTE"
        pk = "NOTE#{{note_id}}"
        sk = "NOTE"
'''

APP_B = '''
import json, sys
import dynorm
from model_b import Shared, User, Note
if sys.argv[1] == "setup":
    Shared.create_table()
    for i in range(1, 7):
        User.objects.create(user_id=f"u{i}", email="b@example.com", nickname=f"nick{i}")
        Note.objects.create(note_id=f"n{i}", text="b", nickname=f"nick{i}")
else:
    print(json.dumps({**{f"u{i}": User.objects.get(user_id=f"u{i}").nickname for i in range(1, 7)},
                      **{f"n{i}": Note.objects.get(note_id=f"n{i}").nickname for i in range(1, 7)}}))
'''

APP_A = '''
import dynorm
from model_a import User, Note

u = User.objects.get(user_id="u1"); u.email = "a@example.com"; u.save()                 # versioned save
User.objects.update_with_retry({"user_id": "u2"}, lambda u: setattr(u, "email", "a@example.com"))
u = User.objects.get(user_id="u3")
with dynorm.transaction() as tx:
    tx.save(u)
User.objects.update_or_create(user_id="u4", defaults={"email": "a@example.com"})
User.objects.get_or_create(user_id="u5", defaults={"email": "a@example.com"})
u = User.objects.get(user_id="u6"); u.email = "a@example.com"; u.save(update_fields=["email"])
n = Note.objects.get(note_id="n1"); n.text = "a"; n.save()                              # unversioned save
Note(note_id="n2", text="a").save()                                                     # blind save
n = Note.objects.get(note_id="n3")
with dynorm.transaction() as tx:
    tx.save(n)
Note.objects.update_or_create(note_id="n4", defaults={"text": "a"})
Note.objects.filter(note_id="n5").update(text="a")
n = Note.objects.get(note_id="n6"); n.update(text="a")
print("ok")
'''


def _run(tmp: Path, script: str, *args: str) -> str:
    env = dict(os.environ)
    settings = conf.get_settings()
    env.update(DYNORM_ENDPOINT=settings.endpoint or "", DYNORM_TABLE_PREFIX=settings.table_prefix,
               DYNORM_REGION=settings.region,
               PYTHONPATH=os.pathsep.join([str(tmp), *filter(None, [os.environ.get("PYTHONPATH")])]))
    env.pop("DYNORM_CONFIG", None)
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(script), *args], cwd=tmp, env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_attributes_only_the_newer_version_declares_survive_every_write_of_the_older(tmp_path: Path) -> None:
    (tmp_path / "model_a.py").write_text(MODEL.format(extra=""))
    (tmp_path / "model_b.py").write_text(MODEL.format(extra="nickname = fields.String(null=True)"))
    table = conf.get_settings().table_prefix + "rolling_deploy"
    try:
        _run(tmp_path, APP_B, "setup")
        assert _run(tmp_path, APP_A).strip() == "ok"
        seen = json.loads(_run(tmp_path, APP_B, "check"))
        assert seen == {**{f"u{i}": f"nick{i}" for i in range(1, 7)}, **{f"n{i}": f"nick{i}" for i in range(1, 7)}}
        items = {it["PK"]["S"]: it for it in dynorm.backend.call("Scan", {"TableName": table})["Items"]}
        # every write of A really happened (u5 existed: get_or_create did not write)
        assert {k: v["version"]["N"] for k, v in items.items() if k.startswith("USER")} == {
            "USER#u1": "2", "USER#u2": "2", "USER#u3": "2", "USER#u4": "2", "USER#u5": "1", "USER#u6": "2"}
        assert sorted(k for k, v in items.items() if v.get("text", {}).get("S") == "b") == ["NOTE#n3"]
    finally:
        dynorm.backend.call("DeleteTable", {"TableName": table})
