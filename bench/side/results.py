"""The result file of one run of the side-by-side suite: every figure with its repetitions,
which contenders were available, the profiles recorded, and the machine and load it ran on.

The file is JSON (``bench/results/<stamp>-<mode>.json``) so that ``bench.side.render`` can turn
it into the tables of ``bench/RESULTS.md`` and the plots without re-running anything.
"""

from __future__ import annotations

import json
import math
import os
import platform
import statistics
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

SCHEMA = 1


def percentile(values: list[float], q: float) -> float:
    """The ``q``-th percentile (0-100) by nearest rank; ValueError for no values."""
    if not values:
        raise ValueError("percentile of no values")
    ordered = sorted(values)
    rank = math.ceil(q / 100 * len(ordered))
    return ordered[max(0, min(len(ordered), rank) - 1)]


@dataclass
class Figure:
    """One measured quantity of one contender in one workload: one value per repetition.

    ``row`` is what the tables show (contender and state, e.g. ``dora fsspec, warm``); ``better``
    says which way is good (``lower`` or ``higher``); ``params`` tell figures of one workload
    apart (size, clients, ...). ``na`` is set instead of ``reps`` when the
    contender could not run (``n/a (not built)``, or why it failed).
    """

    workload: str
    row: str
    metric: str
    unit: str
    better: str
    latency_ms: int | None
    reps: list[float] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)
    contender: str = ""
    kind: str = ""  # "limit" (the machine's limit), "peer" or "dora"
    state: str = ""  # "cold", "warm", or "" for a contender without a cache
    na: str | None = None
    command: str = ""
    profile: str | None = None

    @property
    def median(self) -> float:
        return statistics.median(self.reps)

    @property
    def low(self) -> float:
        return min(self.reps)

    @property
    def high(self) -> float:
        return max(self.reps)

    @property
    def measured(self) -> bool:
        return self.na is None and bool(self.reps)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        if self.measured:
            data["median"], data["min"], data["max"] = self.median, self.low, self.high
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Figure:
        fields = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**fields)


@dataclass
class Profile:
    """A py-spy recording of one workload: where its raw samples are and the top frames."""

    id: str
    workload: str
    row: str
    latency_ms: int | None
    target: str
    pid: int
    samples: int
    raw_file: str
    top_self: list[tuple[str, float]]
    top_total: list[tuple[str, float]]
    waiting: float = 0.0  # the share of samples waiting; top frames are shares of the rest


@dataclass
class RunResult:
    """Everything one run produced. Not thread-safe: workloads run one after another."""

    mode: str
    command: str
    settings: dict[str, Any]
    machine: dict[str, Any]
    started: str
    finished: str = ""
    label: str = ""
    contenders: dict[str, str] = field(default_factory=dict)
    figures: list[Figure] = field(default_factory=list)
    profiles: list[Profile] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def find(
        self, workload: str, row: str, metric: str, latency_ms: int | None = None, **params: Any
    ) -> Figure | None:
        """The figure with these keys (``params`` must match those given), or None."""
        for figure in self.figures:
            if (figure.workload, figure.row, figure.metric) != (workload, row, metric):
                continue
            if latency_ms is not None and figure.latency_ms != latency_ms:
                continue
            if all(figure.params.get(k) == v for k, v in params.items()):
                return figure
        return None

    def save(self, path: Path) -> None:
        data = asdict(self)
        data["schema"] = SCHEMA
        data["figures"] = [f.to_json() for f in self.figures]
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1) + "\n")
        tmp.replace(path)

    @classmethod
    def load(cls, path: Path) -> RunResult:
        """Raises ValueError for a file of another schema."""
        data = json.loads(path.read_text())
        if data.get("schema") != SCHEMA:
            raise ValueError(f"{path}: schema {data.get('schema')!r}, expected {SCHEMA}")
        figures = [Figure.from_json(f) for f in data.pop("figures")]
        profiles = [
            Profile(
                **{
                    **p,
                    "top_self": [tuple(x) for x in p["top_self"]],
                    "top_total": [tuple(x) for x in p["top_total"]],
                }
            )
            for p in data.pop("profiles")
        ]
        data.pop("schema")
        return cls(**data, figures=figures, profiles=profiles)


def machine_facts() -> dict[str, Any]:
    """CPU count, memory, Python, platform, the load average now and the git commit."""
    mem_kb = 0
    with open("/proc/meminfo") as meminfo:
        for line in meminfo:
            if line.startswith("MemTotal:"):
                mem_kb = int(line.split()[1])
    return {
        "cpus": os.cpu_count(),
        "memory_gb": round(mem_kb / 2**20, 1),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "load_before": list(os.getloadavg()),
        "commit": _git("rev-parse", "--short", "HEAD"),
        "dirty": bool(_git("status", "--porcelain", "--untracked-files=no")),
    }


def _git(*args: str) -> str:
    try:
        done = subprocess.run(["git", *args], capture_output=True, text=True, check=False)
    except OSError:
        return ""
    return done.stdout.strip()
