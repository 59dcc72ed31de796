"""The one table of ``make bench``: printed, and written to ``bench/results/`` as markdown and JSON."""

from __future__ import annotations

import datetime
import json
import os
import platform
from importlib import metadata
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parents[1] / "results"

#: row key -> (label, unit of the baseline's absolute figure, scale from the measured unit)
ROWS = {
    "get": ("get", "µs CPU", 1.0),
    "put": ("put", "µs CPU", 1.0),
    "update": ("update one attribute", "µs CPU", 1.0),
    "query100": ("query-100", "µs CPU", 1.0),
    "query1000": ("query-1,000", "µs CPU", 1.0),
    "batch_write": ("batch write 1,000", "µs CPU", 1.0),
    "batch_get": ("batch get 100", "µs CPU", 1.0),
    "cold_start": ("cold start (wall)", "ms wall", 1e3),
    "cold_start_cpu": ("cold start (CPU)", "ms CPU", 1e3),
    "memory": ("memory per decoded item", "bytes", 1.0),
}
PACKAGES = ("dynorm", "boto3", "botocore", "pynamodb", "pydynox")


def machine() -> dict[str, Any]:
    """Where and when: CPU, cores, load, Python, the packages' versions, the date (UTC)."""
    cpu = platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "cpu": cpu, "cores": os.cpu_count(), "load_average": list(os.getloadavg()),
            "python": platform.python_version(), "system": platform.platform(), "versions": versions}


def cell(stats: dict[str, float] | None, baseline: bool, unit: str, scale: float) -> str:
    """``0.85× (0.80–0.90)``; the baseline's cell is its absolute median and ``1.00×``."""
    if stats is None:
        return "—"
    if baseline:
        return f"{stats['value'] * scale:,.0f} {unit} = 1.00×"
    return f"{stats['median']:.2f}× ({stats['min']:.2f}–{stats['max']:.2f})"


def table(results: dict[str, dict[str, dict[str, float]]], columns: list[str], baseline: str) -> str:
    """The markdown table: a row per operation, a column per library."""
    lines = ["| operation | " + " | ".join(columns) + " |", "|---" * (len(columns) + 1) + "|"]
    for key, (label, unit, scale) in ROWS.items():
        if key not in results:
            continue
        row = results[key]
        lines.append(f"| {label} | " + " | ".join(cell(row.get(c), c == baseline, unit, scale) for c in columns) + " |")
    return "\n".join(lines)


def write(folder: Path, name: str, text: str, data: dict[str, Any]) -> list[Path]:
    """Write ``<name>.md`` and ``<name>.json`` into ``folder``; return their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    md, js = folder / f"{name}.md", folder / f"{name}.json"
    md.write_text(text + "\n")
    js.write_text(json.dumps(data, indent=2) + "\n")
    return [md, js]
