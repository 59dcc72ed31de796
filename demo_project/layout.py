"""Render the table layout of sample items (PK, SK, GSI keys per entity) for the docs.

    python -m demo_project.layout          # check that docs/models/*.md are current (exit 1 if not)
    python -m demo_project.layout --write  # regenerate the tables in docs/models/*.md

Each model page holds its table between ``<!-- layout:begin -->`` and ``<!-- layout:end -->``;
tests run the check, so the pages cannot drift from the models.
"""

from __future__ import annotations

import datetime as dt
import decimal
import re
import sys
from pathlib import Path
from typing import Any

DOCS = Path(__file__).resolve().parents[1] / "docs" / "models"
BEGIN, END = "<!-- layout:begin -->", "<!-- layout:end -->"
U = ["01HV5Z7G3K4M8N2P6Q9R0S1T2A", "01HV5Z7G3K4M8N2P6Q9R0S1T2B", "01HV5Z7G3K4M8N2P6Q9R0S1T2C",
     "01HV5Z7G3K4M8N2P6Q9R0S1T2D", "01HV5Z7G3K4M8N2P6Q9R0S1T2E", "01HV5Z7G3K4M8N2P6Q9R0S1T2F"]
T0 = dt.datetime(2024, 6, 1, 12, 0, tzinfo=dt.timezone.utc)


def layout_table(objs: list[Any]) -> str:
    """A markdown table: entity type, then every key attribute any of the items writes."""
    rows = []
    columns: list[str] = []
    for obj in objs:
        keys = {k: v for k, v in obj.key_attributes().items() if v is not None}
        for b in obj._meta.indexes.values():
            if b.is_multi:  # the fields' own attributes are the keys: shown as stored, natively typed
                for role, fnames in (("HASH", b.pk_fields), ("RANGE", b.sk_fields)):
                    for f in fnames:
                        value = getattr(obj, f)
                        if value is not None:
                            keys[f"{obj._meta.fields[f].attr_name} ({b.index_name} {role})"] = str(value)
        for k in keys:
            if k not in columns:
                columns.append(k)
        rows.append((obj._meta.entity_type, keys))
    tmeta = objs[0]._meta.table._meta
    order = [tmeta.pk_attribute, tmeta.sk_attribute] + [a for pair in tmeta.gsis.values() for a in pair]
    columns.sort(key=lambda c: order.index(c) if c in order else len(order))
    type_attr = tmeta.type_attribute
    lines = [f"| {type_attr} | " + " | ".join(columns) + " |", "|" + " --- |" * (len(columns) + 1)]
    for etype, keys in rows:
        cells = [f"`{keys[c]}`".replace("|", "\\|") if c in keys else "" for c in columns]
        lines.append(f"| {etype} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def samples() -> dict[str, list[Any]]:
    """Sample items per model page."""
    from demo_project.catalog.models import Brand, Category, Product
    from demo_project.kayak import models as k
    from demo_project.library import models as lib
    from demo_project.monithor import models as m
    from demo_project.orders import models as o

    return {
        "catalog": [Brand(brand_id="3", name="Tesla"), Category(category_id="1", name="Cars"),
                    Product(product_id=U[0], brand_id="3", category_id="1", name="Model 3", stock_level=70)],
        "kayak": [k.StoreMetadata(store_id=U[0], name="Paddle OR", address="1 River Rd", state="OR"),
                  k.StoreInventoryItem(store_id=U[0], inventory_id=U[1], model="Pelican Argo"),
                  k.StoreEmployee(store_id=U[0], person_id=U[2], name="Sam"),
                  k.StoreActiveRental(store_id=U[0], person_id=U[3], inventory_id=U[1], rental_id=U[4]),
                  k.PersonMetadata(person_id=U[3], name="Ada"),
                  k.EmploymentRelationship(employment_id=U[5], store_id=U[0], person_id=U[2]),
                  k.RentalRelationship(rental_id=U[4], store_id=U[0], person_id=U[3], inventory_id=U[1])],
        "orders": [o.Customer(customer_id="123", name="Ann"),
                   o.Order(customer_id="123", order_id="2020-11-25", total=decimal.Decimal("9.99")),
                   o.Order(customer_id="123", order_id="2020-12-06", total=decimal.Decimal("25"))],
        "monithor": [m.Organization(org_id="1234", name="Acme"), m.Project(project_id="77", org_id="1234", name="Web"),
                     m.Monitor(monitor_id="9", project_id="77", url="https://example.com", nextrun_at=T0),
                     m.Log(monitor_id="9", log_id=U[0], status=200, latency_ms=40, created_at=T0),
                     m.User(user_id="5", email="u5@example.com"),
                     m.Membership(user_id="5", project_id="77", access_level="admin")],
        "library": [lib.Author(author_id="neumann", name="John von Neumann"),
                    lib.Article(author_id="neumann", article_id="theory_of_automata", title="Theory of automata",
                                category="Computer Science", year="1966", keywords=["automata"]),
                    lib.KeywordArticle(keyword="automata", author_id="neumann", article_id="theory_of_automata",
                                       title="Theory of automata"),
                    lib.ArticleKeyword(article_id="theory_of_automata", keyword="automata")],
    }


def expected_pages() -> dict[Path, str]:
    """{page: full text with the current table} for every model page whose table differs or not."""
    out = {}
    for name, objs in samples().items():
        page = DOCS / f"{name}.md"
        text = page.read_text()
        block = f"{BEGIN}\n{layout_table(objs)}\n{END}"
        out[page] = re.sub(re.escape(BEGIN) + r".*?" + re.escape(END), lambda _m, b=block: b, text, flags=re.S)
    return out


def main(argv: list[str]) -> int:
    """Check (default) or ``--write`` the layout tables; return an exit code."""
    stale = [p for p, text in expected_pages().items() if p.read_text() != text]
    if "--write" in argv:
        for page, text in expected_pages().items():
            page.write_text(text)
        print(f"wrote {len(stale)} page(s)")
        return 0
    for p in stale:
        print(f"stale layout table in {p}; run: python -m demo_project.layout --write")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
