"""``import dynorm`` stays lean: the write path loads on first use (cold starts, docs/performance.md)."""

from __future__ import annotations

import subprocess
import sys

#: modules a process that only reads never needs
WRITE_PATH = ["dynorm.transaction", "dynorm.batch", "dynorm.writes", "dynorm.write_put", "dynorm.write_update",
              "dynorm.write_op", "dynorm.instance_writes", "dynorm.fallback", "dynorm.schema", "dynorm.checks"]


def python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)


def test_import_dynorm_does_not_import_the_write_path() -> None:
    done = python(f"import sys, dynorm; print(sorted(m for m in {WRITE_PATH!r} if m in sys.modules))")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_lazy_names_stay_the_public_ones_when_a_first_write_loads_their_module_first() -> None:
    # a first save loads the submodule dynorm.transaction, which the import system binds on the
    # package as `transaction`: it must not hide the function dynorm.transaction
    code = ("import sys, types, dynorm\n"
            "import dynorm.instance_writes\n"
            "assert 'dynorm.transaction' in sys.modules\n"
            "assert not isinstance(dynorm.transaction, types.ModuleType), dynorm.transaction\n"
            "from dynorm import transaction, Transaction, atransaction\n"
            "assert transaction is sys.modules['dynorm.transaction'].transaction\n"
            "assert Transaction is sys.modules['dynorm.transaction'].Transaction\n"
            "assert atransaction is sys.modules['dynorm.transaction'].atransaction\n")
    done = python(code)
    assert done.returncode == 0, done.stderr


def test_lazy_names_load_on_first_access() -> None:
    done = python("import sys, dynorm\nt = dynorm.transaction\nprint(callable(t), 'dynorm.transaction' in sys.modules)")
    assert done.stdout.split() == ["True", "True"], done.stderr


def test_an_unknown_name_is_still_an_attribute_error() -> None:
    done = python("import dynorm\ntry:\n    dynorm.no_such_name\nexcept AttributeError as e:\n    print(e)")
    assert "module 'dynorm' has no attribute 'no_such_name'" in done.stdout, done.stderr
