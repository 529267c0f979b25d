"""``/v1/read`` and ``/v1/status`` of a real worker process over a local-directory UFS, warm
(every page cached): how much the REST layer costs per request.

Run with ``.venv/bin/python -m bench.experiments.rest_read_bench`` (``--workloads``, ``--reps``,
``--requests``). Starts ``dora worker start`` on a free port, writes the files, warms the cache,
then per workload runs ``--reps`` rounds of ``--requests`` calls on one keep-alive connection and
prints the median and min-max:
- ``small-read``: 4 KB reads at fixed offsets of a 16 MB file (requests/s);
- ``range-read``: the same with a ``Range`` header instead of offset/length (requests/s);
- ``large-read``: the whole 16 MB file (MB/s);
- ``status``: ``/v1/status`` of the file (requests/s).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx

FILE_SIZE = 16 << 20
SMALL = 4096
WORKLOADS = ("small-read", "range-read", "large-read", "status")


def start_worker(base: Path, data: Path) -> tuple[subprocess.Popen[bytes], str]:
    state = base / "state.json"
    # ``-m`` rather than the console script, so PYTHONPATH can point the worker at another
    # checkout (the "before" of a before/after comparison).
    args = [sys.executable, "-m", "worker.cli.main", "worker", "start",
            f"-Ddora.work.dir={base / 'work'}", "-Ddora.worker.http.port=0", f"-Ddora.worker.ufs.roots=file://{data}",
            "-Ddora.worker.page.store.sizes=256MB", "--state-file", str(state)]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("DORA_")}
    worker = subprocess.Popen(args, env=env, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not state.exists():
        if worker.poll() is not None or time.monotonic() > deadline:
            worker.kill()
            raise RuntimeError("the worker did not start")
        time.sleep(0.05)
    port = json.loads(state.read_text())["port"]
    return worker, f"http://127.0.0.1:{port}"


def workload(name: str, client: httpx.Client, uri: str, requests: int) -> Callable[[], float]:
    """One round of ``name``: returns the figure (requests/s, or MB/s for large-read)."""

    def round_() -> float:
        started = time.perf_counter()
        for i in range(requests):
            offset = (i * 7919 * SMALL) % (FILE_SIZE - SMALL)
            if name == "small-read":
                answer = client.get("/v1/read", params={"path": uri, "offset": offset,
                                                        "length": SMALL})  # fmt: skip
            elif name == "range-read":
                last = offset + SMALL - 1
                answer = client.get("/v1/read", params={"path": uri},
                                    headers={"Range": f"bytes={offset}-{last}"})  # fmt: skip
            elif name == "large-read":
                answer = client.get("/v1/read", params={"path": uri})
            else:
                answer = client.get("/v1/status", params={"path": uri})
            if answer.status_code >= 300:
                raise RuntimeError(f"{name}: {answer.status_code} {answer.text[:200]}")
        seconds = time.perf_counter() - started
        if name == "large-read":
            return requests * FILE_SIZE / (1 << 20) / seconds
        return requests / seconds

    return round_


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.experiments.rest_read_bench", description=__doc__
    )
    parser.add_argument("--workloads", nargs="+", choices=WORKLOADS, default=list(WORKLOADS))
    parser.add_argument("--reps", type=int, default=5, help="rounds per workload (at least 3)")
    parser.add_argument("--requests", type=int, default=2000, help="calls per round")
    args = parser.parse_args(argv)
    if args.reps < 3:
        parser.error("--reps: every figure is the median of at least 3 rounds")
    with tempfile.TemporaryDirectory(prefix="dora-rest-bench-") as tmp:
        base = Path(tmp)
        data = base / "data"
        data.mkdir()
        (data / "f.bin").write_bytes(os.urandom(FILE_SIZE))
        uri = f"file://{data}/f.bin"
        worker, url = start_worker(base, data)
        try:
            with httpx.Client(base_url=url, timeout=60) as client:
                client.get("/v1/read", params={"path": uri}).raise_for_status()  # warm
                for name in args.workloads:
                    requests = (
                        max(1, args.requests // 100) if name == "large-read" else args.requests
                    )
                    one = workload(name, client, uri, requests)
                    one()  # warm-up round
                    figures = [one() for _ in range(args.reps)]
                    unit = "MB/s" if name == "large-read" else "req/s"
                    print(f"{name:<11} {statistics.median(figures):9.0f} {unit}  "
                          f"(min {min(figures):.0f}, max {max(figures):.0f}; "
                          f"{args.reps} rounds of {requests})", flush=True)  # fmt: skip
        finally:
            worker.send_signal(signal.SIGTERM)
            worker.wait(timeout=60)
    return 0


if __name__ == "__main__":
    sys.exit(main())
