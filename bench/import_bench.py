"""The client's import and construction (issue 27 item 4), as a user who ran
``pip install doracache`` pays it: ``import fsspec; fsspec.filesystem("dora")`` in a fresh
interpreter, side by side with ``import fsspec`` alone, in a client-only install (the base
dependencies, no ``[worker]`` extra, made under ``build/client-venv``) and in the development
venv (every extra and the test tools).

    .venv/bin/python -m bench.import_bench --runs 7

Each line is a fresh interpreter; the measures alternate within every run so the machine's load
touches all alike. Figures: median (min-max) of wall and CPU time (user + system of the child),
and the modules loaded beyond ``import fsspec``. CPU time is the steadier figure on a machine
shared with other work.
"""

from __future__ import annotations

import argparse
import hashlib
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
COUNT = (
    "import sys, fsspec; n = len(sys.modules); fsspec.filesystem('dora');"
    " print(len(sys.modules) - n)"
)


@dataclass
class Measure:
    label: str
    python: Path
    code: str
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)

    def run_once(self) -> None:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run([str(self.python), "-c", self.code], check=True, cwd="/")
        self.wall.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.cpu.append(
            after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime,
        )


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
    measures = [
        Measure("client-only install: import fsspec", client, IMPORT_ONLY),
        Measure("client-only install: import + fsspec.filesystem('dora')", client, CONSTRUCT),
        Measure("development venv: import fsspec", dev, IMPORT_ONLY),
        Measure("development venv: import + fsspec.filesystem('dora')", dev, CONSTRUCT),
    ]
    for _ in range(args.runs):
        for measure in measures:
            measure.run_once()
    print(f"{'measure':58} {'wall':>18} {'CPU':>18}")
    for measure in measures:
        print(f"{measure.label:58} {spread(measure.wall):>18} {spread(measure.cpu):>18}")
    for venv, (alone, built) in (("client-only", measures[0:2]), ("development", measures[2:4])):
        ratio = statistics.median(built.cpu) / statistics.median(alone.cpu)
        extra = statistics.median(built.cpu) - statistics.median(alone.cpu)
        modules = subprocess.run(
            [str(built.python), "-c", COUNT], check=True, capture_output=True, text=True, cwd="/"
        ).stdout.strip()
        print(
            f"{venv}: construction costs {ratio:.2f}x import fsspec alone in CPU"
            f" (+{extra * 1000:.0f} ms), {modules} modules beyond fsspec"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
