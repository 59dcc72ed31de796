"""A throwaway project on disk (tables, models at v1 or v2, migrations) for migration tests."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

from dynorm import backend, conf, tables
from dynorm.migrations.api import make_migrations
from dynorm.migrations.executor import Executor, MigrateOptions
from dynorm.migrations.loader import load_migrations

REPO = Path(__file__).resolve().parents[1]

TABLE_SRC = '''
from dynorm import Table

class MigShop(Table):
    class Meta:
        table_name = "migshop"
        gsi_count = 1
'''

MODELS_SRC = '''
from dynorm import Entity, Index, fields
from {pkg}.tables import MigShop

class Widget(Entity):
    widget_id = fields.String()
    maker = fields.String()
    size = fields.Integer(default=0)
    counter = fields.Integer(default=0)
{version_field}

    class Meta:
        table = MigShop
        entity_type = "WIDGET"
        key_version = "{version}"
        read_versions = {read_versions}
        pk = "{{version}}#W#{{widget_id}}"
        sk = "METADATA"
        indexes = {{"by_maker": Index("GSI1", pk="{{version}}#M#{{maker}}", sk={gsi_sk!r})}}
'''

VERSIONED = "    version = fields.Version()"
V1 = {"version": "v1", "gsi_sk": "W#{widget_id}", "read_versions": None, "version_field": VERSIONED}
V2 = {"version": "v2", "gsi_sk": "S#{size:04d}#W#{widget_id}", "read_versions": None, "version_field": VERSIONED}
#: the same Widget without a fields.Version() (add ``note`` so writes can add an attribute)
UNVERSIONED = "    note = fields.String(null=True)"


#: MigShop with the GSIs ``{gsis}`` (a ``Meta.gsis`` dict)
GSIS_TABLES = '''
from dynorm import Table

class MigShop(Table):
    class Meta:
        table_name = "migshop"
        gsis = {gsis!r}
'''

#: an unversioned Widget without key versions whose ``Meta.indexes`` is the source text ``{indexes}``
INDEXED_MODELS = '''
from dynorm import Entity, Index, fields
from {pkg}.tables import MigShop

class Widget(Entity):
    widget_id = fields.String()
    maker = fields.String()
    size = fields.Integer(default=0)

    class Meta:
        table = MigShop
        entity_type = "WIDGET"
        pk = "W#{{widget_id}}"
        sk = "METADATA"
        indexes = {indexes}
'''

#: the by_maker access pattern on the template GSI1, on the multi-attribute GSI ByMaker, and ByMaker's keys
BY_MAKER_TEMPLATE = 'Index("GSI1", pk="M#{maker}", sk="S#{size:04d}")'
BY_MAKER_MULTI = 'Index("ByMaker", pk=("maker",), sk=("size",))'
BY_MAKER_GSI = {"pk": {"maker": "S"}, "sk": {"size": "N"}}

#: a table with the multi-attribute GSI ByMaker (maker S, size N)
MULTIKEY_TABLES = GSIS_TABLES.format(gsis={"ByMaker": BY_MAKER_GSI})

#: a Widget on ByMaker with key_version {version} and read_versions {rv}
MULTIKEY_MODELS_RV = '''
from dynorm import Entity, Index, fields
from {pkg}.tables import MigShop

class Widget(Entity):
    widget_id = fields.String()
    maker = fields.String()
    size = fields.Integer(default=0)
    counter = fields.Integer(default=0)

    class Meta:
        table = MigShop
        entity_type = "WIDGET"
        key_version = "{version}"
        read_versions = {rv!r}
        pk = "{{version}}#W#{{widget_id}}"
        sk = "METADATA"
        indexes = {{"by_maker": Index("ByMaker", pk=("maker",), sk=("size",))}}
'''


#: a versioned Widget whose key templates are ``{pk}`` and ``{sk}``: {version} need not lead the partition key
VERSION_LATE_MODELS = '''
from dynorm import Entity, fields
from {pkg}.tables import MigShop

class Widget(Entity):
    widget_id = fields.String()
    maker = fields.String()
    version = fields.Version()

    class Meta:
        table = MigShop
        entity_type = "WIDGET"
        key_version = "{version}"
        pk = {pk!r}
        sk = {sk!r}
'''


class Project:
    """A throwaway project on disk: <pkg>/tables.py, <pkg>/models.py, <pkg>/migrations/."""

    def __init__(self, root: Path, pkg: str) -> None:
        self.root = root
        self.pkg = pkg
        self.dir = root / pkg
        self.dir.mkdir()
        (self.dir / "__init__.py").write_text("")
        (self.dir / "tables.py").write_text(TABLE_SRC)
        self.migrations = f"{pkg}.migrations"
        sys.path.insert(0, str(root))

    def write_models(self, **variant: Any) -> Any:
        return self.write_models_source(MODELS_SRC.format(pkg=self.pkg, **variant))

    def write_models_source(self, src: str) -> Any:
        """Write ``models.py`` (a source already formatted), (re)import it and return the module."""
        (self.dir / "models.py").write_text(src)
        name = f"{self.pkg}.models"
        module = importlib.reload(sys.modules[name]) if name in sys.modules else importlib.import_module(name)
        return module

    def stage(self, tables_src: str, models_src: str) -> Any:
        """Write ``tables.py`` and ``models.py`` (sources already formatted), (re)import both and
        forget the table classes the previous ``tables.py`` registered; return the models module."""
        (self.dir / "tables.py").write_text(tables_src)
        (self.dir / "models.py").write_text(models_src)
        for name in (f"{self.pkg}.tables", f"{self.pkg}.models"):
            if name in sys.modules:
                importlib.reload(sys.modules[name])
            else:
                importlib.import_module(name)
        for t in [t for t in tables._TABLES if t.__module__ == f"{self.pkg}.tables" and t is not self.table]:
            tables._TABLES.remove(t)
        return sys.modules[f"{self.pkg}.models"]

    @property
    def table(self) -> Any:
        return importlib.import_module(f"{self.pkg}.tables").MigShop

    def makemigrations(self, **kw: Any) -> Any:
        return make_migrations(self.migrations, [self.table], **kw)

    def executor(self) -> Executor:
        return Executor(load_migrations(self.migrations))

    def config(self) -> Path:
        cfg = self.root / "dynorm.yaml"
        settings = conf.get_settings()
        cfg.write_text(f"models: [{self.pkg}.models]\nmigrations: {self.migrations}\n"
                       f"table_prefix: '{settings.table_prefix}'\n"
                       f"connection: {{region: us-east-1, endpoint: '{settings.endpoint}'}}\n")
        return cfg

    def cleanup(self) -> None:
        table = self.table
        if table.exists():
            table.delete_table()
        if table in tables._TABLES:
            tables._TABLES.remove(table)
        sys.path.remove(str(self.root))
        for name in [m for m in sys.modules if m == self.pkg or m.startswith(self.pkg + ".")]:
            del sys.modules[name]


def stage_indexed(project: Project, gsis: dict[str, Any], indexes: str) -> Any:
    """Stage MigShop with ``gsis`` and the INDEXED_MODELS Widget with ``indexes``; return the models module."""
    return project.stage(GSIS_TABLES.format(gsis=gsis), INDEXED_MODELS.format(pkg=project.pkg, indexes=indexes))


def scan_all(table: Any) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    params: dict[str, Any] = {"TableName": table.table_name(), "ConsistentRead": True}
    while True:
        resp = backend.call("Scan", params)
        items += resp["Items"]
        if "LastEvaluatedKey" not in resp:
            return items
        params["ExclusiveStartKey"] = resp["LastEvaluatedKey"]


def widgets(table: Any) -> list[dict[str, Any]]:
    return [i for i in scan_all(table) if i.get("entityType", {}).get("S") == "WIDGET"]


def body(item: dict[str, Any]) -> dict[str, Any]:
    """An item's attributes without its keys and the revisions a rekey records it was copied from
    (``_dynorm_rev_src``: every rekey writes it, so that the stream reads its INSERT as a move)."""
    return {k: v for k, v in item.items() if k not in ("PK", "SK", "GSI1PK", "GSI1SK", "_dynorm_rev_src")}


def copied_from(item: dict[str, Any]) -> list[str]:
    """The revisions a rekey recorded on ``item`` (``_dynorm_rev_src``), ``[]`` when none."""
    return list((item.get("_dynorm_rev_src") or {}).get("SS", []))


def load_v1(project: Project, n: int, **variant: Any) -> Any:
    models = project.write_models(**{**V1, **variant})
    result = project.makemigrations()
    assert result.name == "0001_initial"
    project.executor().migrate(MigrateOptions())
    models.Widget.objects.bulk_create([models.Widget(widget_id=f"w{i:05d}", maker=f"m{i % 7}", size=i % 50)
                                       for i in range(n)])
    for i in range(0, n, max(1, n // 50)):  # an attribute no model declares
        backend.call("UpdateItem", {"TableName": project.table.table_name(),
                                    "Key": {"PK": {"S": f"v1#W#w{i:05d}"}, "SK": {"S": "METADATA"}},
                                    "UpdateExpression": "SET legacy = :l", "ExpressionAttributeValues": {
                                        ":l": {"M": {"note": {"S": f"kept {i}"}}}}})
    return models


