import os, datetime as dt
os.environ.setdefault("DYNORM_ENDPOINT", "http://127.0.0.1:8611")
import dynorm
from dynorm import Entity, Index, Q, Table, fields, backend
dynorm.configure(endpoint=os.environ["DYNORM_ENDPOINT"])
utc = dt.timezone.utc
class T9(Table):
    class Meta:
        table_name = "adv11-t9"
        gsi_count = 1
class PD(Entity):
    day = fields.DateTime()
    eid = fields.String()
    note = fields.String(default="x")
    class Meta:
        table = T9; entity_type = "PD"
        pk = "DAY#{day:%Y-%m-%d}"; sk = "E#{eid}"
class GD(Entity):
    g = fields.String()
    day = fields.DateTime()
    eid = fields.String()
    class Meta:
        table = T9; entity_type = "GD"
        pk = "GD#{g}"; sk = "E#{eid}"
        indexes = {"by_day": Index("GSI1", pk="GDAY#{day:%Y-%m}", sk="{eid}")}
class Ev(Entity):
    g = fields.String()
    day = fields.DateTime()
    eid = fields.String()
    class Meta:
        table = T9; entity_type = "EVX"
        pk = "EV#{g}"; sk = "D#{day:%Y-%m-%d}#{eid}"
def t(label, fn, exp):
    try: got = fn()
    except Exception as e: got = f"{type(e).__name__}"
    ok = got in exp if isinstance(exp, tuple) else got == exp
    print(("SAFE: " if ok else "BUG: ") + label + ("" if ok else f" (expected {exp!r}, got {got!r})"))
try: T9.delete_table()
except Exception: pass
T9.create_table()
nine = dt.datetime(2024, 3, 1, 9, tzinfo=utc); eight = nine.replace(hour=8)
PD.objects.create(day=nine, eid="a")
t("PD get(day=8:00, eid=a) lossy pk", lambda: str(PD.objects.get(day=eight, eid="a").day), ("DoesNotExist", "InvalidQuery"))
t("PD filter(day=8:00) list", lambda: len(list(PD.objects.filter(day=eight))), (0, "InvalidQuery"))
t("PD filter(day=8:00).count", lambda: PD.objects.filter(day=eight).count(), (0, "InvalidQuery"))
t("PD filter(day=8:00, eid=a).exists", lambda: PD.objects.filter(day=eight, eid="a").exists(), (False, "InvalidQuery"))
t("PD in_bulk lossy pk", lambda: len(PD.objects.in_bulk([{"day": eight, "eid": "a"}])), (0, "InvalidQuery"))
def upd():
    try: PD.objects.filter(day=eight, eid="a").update(note="HACK")
    except Exception: pass
    return PD.objects.filter(day=nine).first().note
t("PD filter(day=8:00,eid=a).update() must not write 9:00", upd, "x")
GD.objects.create(g="g", day=nine, eid="a")
t("GD filter(day=8:00) via lossy GSI pk", lambda: len(list(GD.objects.filter(day=eight))), (0, "InvalidQuery"))
t("GD filter(day=8:00).count via lossy GSI pk", lambda: GD.objects.filter(day=eight).count(), (0, "InvalidQuery"))
for h in (9, 3, 15): Ev.objects.create(g="g", day=nine.replace(hour=h), eid="abc"[[9,3,15].index(h)])
t("Ev latest('day') lossy", lambda: Ev.objects.filter(g="g").latest("day").day.hour, (15, "InvalidQuery"))
t("Ev earliest('day') lossy", lambda: Ev.objects.filter(g="g").earliest("day").day.hour, (3, "InvalidQuery"))
t("Ev filter(day=9:00) exact through lossy prefix", lambda: [o.eid for o in Ev.objects.filter(g="g", day=nine)], ["a"])
t("Ev filter(day=9:00, eid=a) get", lambda: Ev.objects.get(g="g", day=nine, eid="a").eid, "a")
t("Ev get(day=8:00, eid=a) lossy mid-sk", lambda: Ev.objects.get(g="g", day=eight, eid="a").eid, ("DoesNotExist", "InvalidQuery"))
t("Ev in_bulk(day=8:00, eid=a)", lambda: len(Ev.objects.in_bulk([{"g": "g", "day": eight, "eid": "a"}])), (0, "InvalidQuery"))
t("Ev filter(day__gt=9:00)", lambda: sorted(o.eid for o in Ev.objects.filter(g="g", day__gt=nine)), ["c"])
t("Ev filter(day__lte=9:00) order", lambda: [o.eid for o in Ev.objects.filter(g="g", day__lte=nine)], ["a", "b"])
t("PD get(pk=(eight,'a'))", lambda: PD.objects.get(pk=(eight, "a")).eid, ("DoesNotExist", "InvalidQuery"))
o = PD.objects.get(day=nine, eid="a")
t("PD refresh of instance with day changed to 8:00 (same key)", lambda: (setattr(o, "day", eight), o.refresh_from_db() if hasattr(o, "refresh_from_db") else o.refresh(), str(o.day))[2], (str(nine), "DoesNotExist", "KeyChangeError", "InvalidQuery"))
