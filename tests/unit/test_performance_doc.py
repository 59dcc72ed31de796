"""The commands docs/performance.md shows are real: each make target exists, each script exists and
takes the options shown, and the table there has the rows and columns ``make bench`` prints."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "docs" / "performance.md").read_text()
COMMANDS = [line[2:] for block in re.findall(r"^```console\n(.*?)^```", PAGE, re.S | re.M)
            for line in block.splitlines() if line.startswith("$ ")]


def test_the_page_shows_commands() -> None:
    assert any(c.startswith("make bench") for c in COMMANDS)
    assert any(c.startswith("python bench/bench_compare.py") for c in COMMANDS)


def test_each_make_target_shown_exists() -> None:
    makefile = (ROOT / "Makefile").read_text()
    for command in [c for c in COMMANDS if c.startswith("make ")] + ["make bench-more"]:
        target = shlex.split(command)[1]
        assert re.search(rf"^{re.escape(target)}:", makefile, re.M), command
        for variable in re.findall(r"\b([A-Z_]+)=", command):
            assert re.search(rf"^{variable} \?=", makefile, re.M), (command, variable)
            assert f"$({variable})" in makefile, (command, variable)


def test_each_script_shown_takes_the_options_shown() -> None:
    options = re.findall(r"^\| `(--[a-z-]+)` \|", PAGE, re.M)  # the page's table of options
    assert options
    commands = [c for c in COMMANDS if c.startswith("python ")]
    for command in commands + ["python bench/bench_compare.py " + " ".join(options)]:
        words = shlex.split(command)
        script = ROOT / words[1]
        assert script.is_file(), command
        shown = {w for w in words[2:] if w.startswith("--")}
        helped = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=60)
        assert helped.returncode == 0, helped.stderr
        assert shown <= set(re.findall(r"--[a-z-]+", helped.stdout)), (command, helped.stdout)


def test_the_table_shown_has_the_rows_and_columns_make_bench_prints() -> None:
    sys.path.insert(0, str(ROOT))
    from bench.compare.report import ROWS

    header = next(line for line in PAGE.splitlines() if line.startswith("| operation | boto3 |"))
    assert [c.strip() for c in header.strip("|").split("|")][1:] == ["boto3", "PynamoDB", "pydynox", "dynorm"]
    start = PAGE.splitlines().index(header)
    rows = [line.split("|")[1].strip() for line in PAGE.splitlines()[start + 2:start + 2 + len(ROWS)]]
    assert rows == [label for label, _, _ in ROWS.values()]
