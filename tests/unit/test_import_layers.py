"""dynorm's modules import one way, down: the only import circle is ``query`` <-> ``manager``.

Every import counts: at module level, under ``if TYPE_CHECKING:`` and inside functions. An
annotation-only import of ``Entity`` or ``Table`` from a planner is still a dependency a reader
follows; the layers below ``models``/``tables`` are typed against :mod:`dynorm._protocols`.
The one allowed circle is Django's: a manager is built from its queryset, and a queryset
returns the model's manager.
"""

from __future__ import annotations

import ast
from pathlib import Path

import dynorm

PACKAGE = Path(dynorm.__file__).parent
ALLOWED_CIRCLE = {"dynorm.query", "dynorm.manager"}

#: The layers below the ORM face's classes: typed against protocols, they never import these.
FACE = {"dynorm.models", "dynorm.tables"}
BELOW_FACE = {
    "dynorm.backend", "dynorm.backend.records", "dynorm.backend.errors", "dynorm.backend.clients",
    "dynorm.backend.retries", "dynorm.backend.calls", "dynorm.backend.steps", "dynorm.backend.paging",
    "dynorm.backend.stream_calls",
    "dynorm.backend.wire", "dynorm.backend.wire_json",
    "dynorm.registry", "dynorm.fields", "dynorm.table_options", "dynorm.options", "dynorm._protocols",
    "dynorm.expressions", "dynorm.plan", "dynorm.plan_value", "dynorm.access_paths",
    "dynorm.key_conditions", "dynorm.writes", "dynorm.write_op", "dynorm.write_keys", "dynorm.write_conditions",
    "dynorm.write_put", "dynorm.write_update", "dynorm.write_delete", "dynorm.write_rollout", "dynorm.checks",
    "dynorm.schema", "dynorm._deferred", "dynorm.constraints", "dynorm.write_unique", "dynorm.unique_reads",
    "dynorm.unique_batch",
    "dynorm.sender", "dynorm.batch", "dynorm.fallback", "dynorm.transaction", "dynorm.instance_writes",
    "dynorm.iterables", "dynorm.query", "dynorm.shards", "dynorm.shard_merge",
    "dynorm.query_writes", "dynorm.manager",
}


def module_files(package: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every ``.py`` file under ``package`` (a package is its ``__init__``)."""
    out = {}
    for path in package.rglob("*.py"):
        parts = path.relative_to(package.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def imported_modules(name: str, path: Path, known: set[str]) -> set[str]:
    """The modules of ``known`` that module ``name`` (file ``path``) imports, anywhere in the file."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            # `from . import schema` imports the submodule; `from .keys import VERSION` the module
            subs = [f"{base}.{alias.name}" for alias in node.names]
            found.update(s for s in subs if s in known)
            if any(s not in known for s in subs):
                found.add(base)
    return {m for m in found if m in known and m != name}


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Module -> the package's modules it imports."""
    files = module_files(package)
    return {name: imported_modules(name, path, set(files)) for name, path in files.items()}


def circles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[set[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(component)
    return out


def describe(graph: dict[str, set[str]], component: set[str]) -> str:
    """The edges inside one circle, one module a line."""
    return "\n".join(f"  {m} -> {', '.join(sorted(graph[m] & component))}" for m in sorted(component))


def test_the_only_import_circle_is_query_and_manager():
    graph = import_graph()
    found = circles(graph)
    unexpected = [c for c in found if c != ALLOWED_CIRCLE]
    assert not unexpected, "import circles besides query <-> manager (every import counted, TYPE_CHECKING too):\n" \
        + "\n".join(f"{len(c)} modules:\n{describe(graph, c)}" for c in unexpected)


def test_layers_below_models_and_tables_never_import_them():
    graph = import_graph()
    missing = BELOW_FACE - set(graph)
    assert not missing, f"modules renamed or gone, update this test: {sorted(missing)}"
    upward = {m: sorted(graph[m] & FACE) for m in sorted(BELOW_FACE) if graph[m] & FACE}
    assert not upward, f"typed against dynorm._protocols instead, these import models/tables: {upward}"


def test_the_graph_counts_imports_in_functions_and_type_checking_blocks(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from . import a\n")
    (pkg / "a.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import X\n")
    (pkg / "b.py").write_text("def f():\n    from . import c\n")
    (pkg / "c.py").write_text("from .a import Y\n")
    graph = import_graph(pkg)
    assert graph["pkg"] == {"pkg.a"}
    assert circles(graph) == [{"pkg.a", "pkg.b", "pkg.c"}]
    assert "pkg.a -> pkg.b" in describe(graph, circles(graph)[0])
