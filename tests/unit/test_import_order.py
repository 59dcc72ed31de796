"""``import dynorm`` imports its dependencies' heavy modules from a shallow import nesting.

On Python 3.11 and 3.12 a call that lands on a 16 KB boundary of the interpreter's frame stack maps
and unmaps a chunk each time (python/cpython issue 142183). urllib3's URL patterns are compiled by a
deep recursion when urllib3 is first imported; seven imports down (where botocore first imported it
under dynorm's modules) that thrashed at most stack depths: about 2,800 mmap/munmap pairs and 20 ms
of system time in a cold start (docs/performance.md, "Cold start: what a first get pays").
"""

from __future__ import annotations

import re
import subprocess
import sys


def _nesting(statement: str) -> dict[str, int]:
    """Module -> how many imports deep ``statement`` first imported it (0: by the statement itself)."""
    err = subprocess.run([sys.executable, "-X", "importtime", "-c", statement], capture_output=True, text=True,
                         check=True).stderr
    out: dict[str, int] = {}
    for line in err.splitlines():
        m = re.match(r"import time:\s+\d+ \|\s+\d+ \|( *)(\S+)$", line)
        if m:
            out[m.group(2)] = (len(m.group(1)) - 1) // 2
    return out


def test_urllib3_and_pynamodb_are_first_imported_near_the_top_of_import_dynorm() -> None:
    nesting = _nesting("import dynorm")
    assert nesting["dynorm"] == 0
    assert nesting["botocore.compat"] <= 1 and nesting["urllib3"] <= 2, nesting  # was 7 and 8
    assert nesting["pynamodb.models"] <= 1, nesting
