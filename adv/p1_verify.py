"""--verify when the key version is not at the start of the partition key."""
from common import *
from dynorm.migrations.executor import MigrateOptions
from dynorm.migrations.verify import verify
from dynorm import backend

SRC = '''
from dynorm import Entity, fields
from {pkg}.tables import MigShop

class Widget(Entity):
    widget_id = fields.String()
    maker = fields.String()
    class Meta:
        table = MigShop
        entity_type = "WIDGET"
        key_version = "{version}"
        pk = {pk!r}
        sk = {sk!r}
'''
for tag, pk, sk in [("sk", "W#{widget_id}", "{version}#METADATA"), ("pktail", "W#{widget_id}#{version}", "METADATA")]:
    p = new_project(tag)
    try:
        m = write_src(p, SRC.format(pkg=p.pkg, version="v1", pk=pk, sk=sk))
        p.makemigrations(); p.executor().migrate(MigrateOptions())
        m.Widget.objects.bulk_create([m.Widget(widget_id=f"w{i}", maker="x") for i in range(40)])
        m = write_src(p, SRC.format(pkg=p.pkg, version="v2", pk=pk, sk=sk))
        r = p.makemigrations(); print("   migration", r.name)
        p.executor().migrate(MigrateOptions())
        items = widgets(p.table)
        print("   after migrate keys sample", sorted((i["PK"]["S"], i["SK"]["S"]) for i in items)[:2], len(items))
        # an old-version writer (app still at v1) puts 5 items at the old keys after the move
        tn = p.table.table_name()
        for i in range(5):
            old = dict(items[0]); 
            pkv = pk.replace("{widget_id}", f"late{i}").replace("{version}", "v1")
            skv = sk.replace("{version}", "v1")
            old.update(PK={"S": pkv}, SK={"S": skv}, widget_id={"S": f"late{i}"})
            old.pop("GSI1PK", None); old.pop("GSI1SK", None)
            backend.call("PutItem", {"TableName": tn, "Item": old})
        ok, rows = verify(p.executor(), r.name)
        left_old = sum(1 for i in widgets(p.table) if "v1" in (i["PK"]["S"] + i["SK"]["S"]))
        print("   verify rows", rows)
        say(not (ok and left_old), f"verify [{tag}: pk={pk} sk={sk}] with {left_old} items still at v1 (expected exit non-zero/not ok, got ok={ok})")
    finally:
        p.cleanup()
