"""Load migration modules from the configured package and order them by their dependencies."""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

from .errors import MigrationError
from .operations import Operation
from .state import ProjectState

__all__ = ["Migration", "load_migrations", "build_state", "package_path", "tables_of", "NAME_RE"]

NAME_RE = re.compile(r"^(\d{4})_(\w+)$")


@dataclass
class Migration:
    """One migration module: ``name`` (``0002_product_v2``), ``dependencies``, ``operations``."""

    name: str
    dependencies: list[str]
    operations: list[Operation]
    module: ModuleType | None = field(default=None, repr=False)

    @property
    def tables(self) -> list[str]:
        """Logical names of the tables its operations touch."""
        return tables_of(self.operations)


def tables_of(operations: list[Operation]) -> list[str]:
    """Logical names of the tables ``operations`` touch, in order of first appearance (pure)."""
    out: list[str] = []
    for op in operations:
        for name in op.tables():
            if name not in out:
                out.append(name)
    return out


def package_path(package: str) -> Path:
    """Return the folder of the migrations package (it may not exist yet).

    Raises:
        MigrationError: the parent package cannot be found.
    """
    spec = importlib.util.find_spec(package) if _parent_importable(package) else None
    if spec is not None and spec.submodule_search_locations:
        return Path(list(spec.submodule_search_locations)[0])
    parent, _, last = package.rpartition(".")
    if parent:
        pspec = importlib.util.find_spec(parent)
        if pspec is None or not pspec.submodule_search_locations:
            raise MigrationError(f"cannot locate package {parent!r} for migrations package {package!r}.")
        return Path(list(pspec.submodule_search_locations)[0]) / last
    return Path.cwd() / last


def _parent_importable(package: str) -> bool:
    parent = package.rpartition(".")[0]
    if not parent:
        return True
    try:
        return importlib.util.find_spec(parent) is not None
    except ModuleNotFoundError:
        return False


def load_migrations(package: str, missing_ok: bool = False) -> list[Migration]:
    """Import every ``NNNN_name.py`` module of ``package`` and return them in dependency order.

    Args:
        package: the dotted migrations package (``migrations:`` in dynorm.yaml).
        missing_ok: return ``[]`` when the package does not exist (``makemigrations`` creates it);
            otherwise a missing package is an error: a typo in ``migrations:`` must not read as
            "no migrations to apply".

    Raises:
        MigrationError: the package does not exist (unless ``missing_ok``), a module without
            ``operations``/``dependencies`` of the right shape, a dependency on a missing
            migration, or a dependency cycle.
    """
    try:
        folder = package_path(package)
    except MigrationError:
        if missing_ok:
            return []
        raise
    if not folder.is_dir():
        if missing_ok:
            return []
        raise MigrationError(
            f"the migrations package {package!r} does not exist (looked for {folder}); check `migrations:` in "
            "dynorm.yaml (a typo?), or run `dynorm makemigrations` to create it.")
    migrations: dict[str, Migration] = {}
    for path in sorted(folder.glob("*.py")):
        if not NAME_RE.match(path.stem):
            continue
        modname = f"{package}.{path.stem}"
        try:
            module = importlib.reload(sys.modules[modname]) if modname in sys.modules else \
                importlib.import_module(modname)
        except Exception as exc:  # noqa: BLE001 - any error in a migration file is reported the same way
            raise MigrationError(f"cannot import migration {modname}: {type(exc).__name__}: {exc}") from exc
        ops = getattr(module, "operations", None)
        deps = getattr(module, "dependencies", None)
        if not isinstance(ops, list) or not all(isinstance(o, Operation) for o in ops):
            raise MigrationError(f"migration {path.stem}: `operations` must be a list of dynorm migration operations.")
        if not isinstance(deps, list) or not all(isinstance(d, str) for d in deps):
            raise MigrationError(f"migration {path.stem}: `dependencies` must be a list of migration names.")
        migrations[path.stem] = Migration(path.stem, list(deps), list(ops), module)
    for m in migrations.values():
        for dep in m.dependencies:
            if dep not in migrations:
                raise MigrationError(f"migration {m.name} depends on {dep!r}, which does not exist in {package}.")
    return _order(migrations)


def _order(migrations: dict[str, Migration]) -> list[Migration]:
    ordered: list[Migration] = []
    state: dict[str, int] = {}  # 1 = visiting, 2 = done

    def visit(name: str, path: list[str]) -> None:
        if state.get(name) == 2:
            return
        if state.get(name) == 1:
            cycle = " -> ".join([*path[path.index(name):], name])
            raise MigrationError(f"migration dependency cycle: {cycle}.")
        state[name] = 1
        for dep in sorted(migrations[name].dependencies):
            visit(dep, [*path, name])
        state[name] = 2
        ordered.append(migrations[name])

    for name in sorted(migrations):
        visit(name, [])
    return ordered


def build_state(migrations: list[Migration], upto: str | None = None) -> ProjectState:
    """Replay the operations of ``migrations`` (in order, through ``upto`` inclusive) into a state.

    Raises:
        MigrationError: an operation does not fit the state (unknown entity type or table, ...).
    """
    state = ProjectState()
    for m in migrations:
        for op in m.operations:
            try:
                op.state_forwards(state)
            except MigrationError as exc:
                raise MigrationError(f"migration {m.name}: {exc}") from exc
        if m.name == upto:
            break
    return state
