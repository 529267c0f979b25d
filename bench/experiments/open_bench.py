"""WebHDFS ``OPEN`` against ``/v1/read`` for a warm large object (issue 37 item 3): the same
worker, the same cached bytes, read whole by curl (which costs the worker nothing but the
socket), the two alternating within every repetition.

    .venv/bin/python -m bench.experiments.open_bench --mb 256 --reps 5

``OPEN`` follows its redirect (``curl -L``), as every WebHDFS client does; ``OPEN`` with
``data=true`` (the data step alone) is shown too, so the redirect's cost and the data step's
are told apart. Figures: MB/s, median (min-max) of the repetitions, each the median of its own
rounds; and the worker's CPU seconds per GB over each path's rounds, the figure that holds on
a shared machine.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
from pathlib import Path
from urllib.parse import quote

from bench.experiments.tls_bench import process_cpu
from bench.side.services import WorkerProcess
from bench.warm_bench import local_worker

MB = 1 << 20


def curl_seconds(url: str, follow: bool) -> tuple[float, int]:
    """Wall seconds and bytes of one whole read of ``url`` by curl, discarding the body."""
    args = ["curl", "-sS", "-o", "/dev/null", "-w", "%{time_total} %{size_download}"]
    out = subprocess.run([*args, *(["-L"] if follow else []), url], check=True,
                         capture_output=True, text=True).stdout  # fmt: skip
    seconds, size = out.split()
    return float(seconds), int(size)


def urls(worker: WorkerProcess, local: Path) -> dict[str, tuple[str, bool]]:
    base = f"http://{worker.address}"
    uri = quote(f"file://{local}", safe="")
    hdfs = f"{base}/webhdfs/v1/file{quote(str(local))}?op=OPEN"
    return {
        "/v1/read": (f"{base}/v1/read?path={uri}", False),
        "OPEN (redirect followed)": (hdfs, True),
        "OPEN data step": (f"{hdfs}&data=true", False),
    }


def one_rep(worker: WorkerProcess, paths: dict[str, tuple[str, bool]], size: int, rounds: int
            ) -> dict[str, tuple[float, float]]:  # fmt: skip
    """Per path: the median MB/s of ``rounds`` reads and the worker's CPU seconds per GB."""
    rates: dict[str, list[float]] = {name: [] for name in paths}
    cpu = dict.fromkeys(paths, 0.0)
    for _ in range(rounds):
        for name, (url, follow) in paths.items():
            before = process_cpu(worker.pid)
            seconds, got = curl_seconds(url, follow)
            cpu[name] += process_cpu(worker.pid) - before
            if got != size:
                raise RuntimeError(f"{name} returned {got} bytes, expected {size}")
            rates[name].append(size / MB / seconds)
    gb = size * rounds / 1e9
    return {name: (statistics.median(rates[name]), cpu[name] / gb) for name in paths}


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):,.3g} ({min(values):,.3g}-{max(values):,.3g})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mb", type=int, default=256)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    size = args.mb * MB
    with tempfile.TemporaryDirectory(prefix="open-bench-") as tmp:
        local, worker = local_worker(Path(tmp), size)
        try:
            paths = urls(worker, local)
            curl_seconds(paths["/v1/read"][0], False)  # fills the cache
            reps = [one_rep(worker, paths, size, args.rounds) for _ in range(args.reps)]
        finally:
            worker.stop()
    print("| path | MB/s | / `/v1/read` | worker CPU s/GB |")
    print("|---|---|---|---|")
    for name in paths:
        rate = [rep[name][0] for rep in reps]
        ratio = [rep[name][0] / rep["/v1/read"][0] for rep in reps]
        cpu = [rep[name][1] for rep in reps]
        print(f"| {name} | {spread(rate)} | {spread(ratio)}x | {spread(cpu)} |")


if __name__ == "__main__":
    main()
