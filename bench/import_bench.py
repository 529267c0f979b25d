"""The client's import and construction (issue 27 item 4, issue 35 item 1), as a user who ran
``pip install doracache`` pays it: ``import fsspec; fsspec.filesystem("dora")`` and
``import worker.client; worker.client.DoraFileSystem()`` in a fresh interpreter, side by side
with ``import fsspec`` alone, in a client-only install (the base dependencies, no ``[worker]``
extra, made under ``build/client-venv``) and in the development venv (every extra and the test
tools; this tree's code, by ``PYTHONPATH``).

    .venv/bin/python -m bench.import_bench --runs 7

Each line is a fresh interpreter run with ``python -X importtime``; the measures alternate
within every run so the machine's load touches all alike. Figures: median (min-max) of the
import time ``-X importtime`` reports (the sum of the top-level imports' cumulative times), of
the CPU time (user + system of the child, which also counts the construction) and of the wall
time, and the modules loaded beyond ``import fsspec``. CPU and import time are the steadier
figures on a machine shared with other work. The goal of issue 35: the client at most 1.6x
``import fsspec``.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLIENT_VENV = ROOT / "build" / "client-venv"
IMPORT_ONLY = "import fsspec"
CONSTRUCT = 'import fsspec; fsspec.filesystem("dora")'
CLIENT = "import worker.client; worker.client.DoraFileSystem()"
COUNT = "import sys, fsspec; n = len(sys.modules); {code}; print(len(sys.modules) - n)"


@dataclass
class Measure:
    label: str
    python: Path
    code: str
    env: dict[str, str] = field(default_factory=dict)
    imports: list[float] = field(default_factory=list)
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)

    def run_once(self) -> None:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(
            [str(self.python), "-X", "importtime", "-c", self.code],
            check=True, cwd="/", capture_output=True, text=True, env={**os.environ, **self.env},
        )  # fmt: skip
        self.wall.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.cpu.append(
            after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime,
        )
        self.imports.append(import_time(done.stderr))


def import_time(report: str) -> float:
    """Seconds of imports in a ``-X importtime`` report: the cumulative time of each top-level
    import (its name indented by one space; nested ones by more), summed."""
    total_us = 0
    for line in report.splitlines():
        fields = line.split("|")
        if line.startswith("import time:") and len(fields) == 3 and fields[1].strip().isdigit():
            name = fields[2]
            if name.startswith(" ") and not name.startswith("  "):
                total_us += int(fields[1])
    return total_us / 1e6


def client_venv() -> Path:
    """A venv holding only what ``pip install doracache`` installs: its dependencies are
    installed again when pyproject.toml changes (its hash is kept next to it), this tree's code
    on every run (so the figure is of the code here)."""
    stamp = CLIENT_VENV / ".pyproject-sha256"
    digest = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    pip = [str(CLIENT_VENV / "bin" / "python"), "-m", "pip", "install", "-q"]
    if not (stamp.exists() and stamp.read_text() == digest):
        shutil.rmtree(CLIENT_VENV, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", str(CLIENT_VENV)], check=True)
        subprocess.run([*pip, str(ROOT)], check=True)
        stamp.write_text(digest)
    else:
        subprocess.run([*pip, "--no-deps", "--force-reinstall", str(ROOT)], check=True)
    return CLIENT_VENV / "bin" / "python"


def spread(values: list[float]) -> str:
    ms = [v * 1000 for v in values]
    return f"{statistics.median(ms):.0f} ms ({min(ms):.0f}-{max(ms):.0f})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=7, help="fresh interpreters per measure")
    args = parser.parse_args()
    client = client_venv()
    dev = Path(sys.executable)
    here = {"PYTHONPATH": str(ROOT)}
    groups = {
        "client-only": [
            Measure("client-only install: import fsspec", client, IMPORT_ONLY),
            Measure(
                "client-only install: import fsspec; fsspec.filesystem('dora')", client, CONSTRUCT
            ),
            Measure("client-only install: import worker.client; DoraFileSystem()", client, CLIENT),
        ],
        "development": [
            Measure("development venv: import fsspec", dev, IMPORT_ONLY, here),
            Measure(
                "development venv: import fsspec; fsspec.filesystem('dora')", dev, CONSTRUCT, here
            ),
            Measure("development venv: import worker.client; DoraFileSystem()", dev, CLIENT, here),
        ],
    }
    measures = [measure for group in groups.values() for measure in group]
    for _ in range(args.runs):
        for measure in measures:
            measure.run_once()
    print(f"{'measure':66} {'-X importtime':>18} {'CPU':>18} {'wall':>18}")
    for measure in measures:
        figures = (spread(measure.imports), spread(measure.cpu), spread(measure.wall))
        print(f"{measure.label:66} {figures[0]:>18} {figures[1]:>18} {figures[2]:>18}")
    for venv, (alone, *clients) in groups.items():
        for built in clients:
            env = {**os.environ, **built.env}
            modules = subprocess.run(
                [str(built.python), "-c", COUNT.format(code=built.code)],
                check=True, capture_output=True, text=True, cwd="/", env=env,
            ).stdout.strip()  # fmt: skip
            print(
                f"{venv}: {built.code!r} is {ratio(built.imports, alone.imports)} import fsspec"
                f" alone in import time, {ratio(built.cpu, alone.cpu)} in CPU;"
                f" {modules} modules beyond fsspec"
            )
    return 0


def ratio(built: list[float], alone: list[float]) -> str:
    return f"{statistics.median(built) / statistics.median(alone):.2f}x"


if __name__ == "__main__":
    sys.exit(main())
