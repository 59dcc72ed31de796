"""sync()/check against a live multi-attribute GSI whose key schema differs from the declaration."""
from common import *
from dynorm import Entity, Index, Table, fields, tables
import dynorm

class A(Table):
    class Meta:
        table_name = "p12"
        gsis = {"ByRegion": {"pk": {"tenant_id": "S", "region": "S"}, "sk": {"year": "N", "title": "S"}}}
A.create_table(wait=True)
tables._TABLES.remove(A)
variants = {
 "sk order swapped": {"pk": {"tenant_id": "S", "region": "S"}, "sk": {"title": "S", "year": "N"}},
 "pk order swapped": {"pk": {"region": "S", "tenant_id": "S"}, "sk": {"year": "N", "title": "S"}},
 "sk attr dropped": {"pk": {"tenant_id": "S", "region": "S"}, "sk": {"year": "N"}},
 "extra sk attr": {"pk": {"tenant_id": "S", "region": "S"}, "sk": {"year": "N", "title": "S", "code": "S"}},
 "year type S": {"pk": {"tenant_id": "S", "region": "S"}, "sk": {"year": "S", "title": "S"}},
 "attr moved pk->sk": {"pk": {"tenant_id": "S"}, "sk": {"region": "S", "year": "N", "title": "S"}},
}
for label, spec in variants.items():
    B = type("B", (Table,), {"Meta": type("Meta", (), {"table_name": "p12", "gsis": {"ByRegion": spec}}), "__module__": __name__})
    try:
        actions = B.sync(dry_run=True)
        desc = [getattr(a, "operation", a) for a in actions]
        out(bool(actions), f"sync(dry_run) sees '{label}'", f"no action planned: live index differs from the declaration silently")
        print("   INFO", [str(a)[:140] for a in actions])
    except Exception as e:
        out(True, f"sync '{label}' raised {type(e).__name__}: {str(e)[:140]}")
    tables._TABLES.remove(B)
A.delete_table()
