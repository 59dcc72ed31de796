"""`make demo` for the seed models other than the catalog: load each and run its access patterns.

    python -m demo_project.seeds_demo [kayak|orders|monithor|library ...]
"""

from __future__ import annotations

import importlib
import sys

import dynorm

from .runner import run_all

MODELS = ["kayak", "orders", "monithor", "library"]


def main(argv: list[str] | None = None) -> int:
    """Load and demo the named models (default: all four); return an exit code."""
    names = (argv if argv is not None else sys.argv[1:]) or MODELS
    for name in names:
        if name not in MODELS:
            print(f"unknown model {name!r}; choose from {', '.join(MODELS)} (or catalog)", file=sys.stderr)
            return 2
        models = importlib.import_module(f"demo_project.{name}.models")
        loader = importlib.import_module(f"demo_project.{name}.load")
        demo = importlib.import_module(f"demo_project.{name}.demo")
        tables = {e._meta.table for e in vars(models).values() if isinstance(e, type) and
                  issubclass(e, dynorm.Entity) and e is not dynorm.Entity and hasattr(e, "_meta")}
        for table in tables:
            if table.exists() and len(table.entities()) and any(
                    e.objects.scan()[:1] for e in table.entities().values()):
                table.delete_table()
                table.create_table()
        ids = loader.load()
        print(f"Loaded {', '.join(f'{v} {k}' for k, v in ids['counts'].items())}.\n")
        captures = run_all(demo.TITLE, demo.patterns(ids))
        print(f"   requests per pattern: {[c.count for c in captures]}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
