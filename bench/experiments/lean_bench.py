"""The worker's warm HTTP path, one code tree against another in the same run (issue 11, "a
lean HTTP path"): status calls/s, a whole-file sequential read and random 64 KiB reads, over
raw HTTP keep-alive connections to a worker over a local SeaweedFS; plus the cold read that
fills the cache.

    .venv/bin/python -m bench.experiments.lean_bench --tree /tmp/base --tree . --mb 64 --reps 3

Each ``--tree`` is a checkout whose ``worker`` package the worker process imports (through
PYTHONPATH); the trees alternate within every repetition, so they share the machine's state.
Figures: median (min-max) of the repetitions. Next to the rates, the worker's CPU time per
operation (from /proc/<pid>/stat), which a machine shared with other work disturbs far less.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from worker.devlab.local.s3 import LocalS3

KB, MB = 1 << 10, 1 << 20
BUCKET = "lean"


def start_worker(tree: Path, work: Path, s3: LocalS3) -> tuple[subprocess.Popen[bytes], int]:
    state = work / "state.json"
    state.unlink(missing_ok=True)
    code = "import sys; from worker.cli.main import main; sys.exit(main())"
    args = [sys.executable, "-c", code, "worker", "start", "-Ddora.worker.http.port=0",
            f"-Ddora.work.dir={work}", f"-Ddora.worker.ufs.roots=s3://{BUCKET}",
            "-Ddora.worker.page.store.sizes=1GB", "--state-file", str(state),
            *(f"-D{d}" for d in s3.storage_defines())]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(tree.resolve())}
    log = (work / "worker.log").open("ab")
    process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=tree)
    deadline = time.monotonic() + 60
    while not state.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"worker did not start; see {work / 'worker.log'}")
        time.sleep(0.05)
    return process, int(json.loads(state.read_text())["port"])


def stop(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def get(conn: http.client.HTTPConnection, url: str, buf: memoryview, rng: str = "") -> int:
    conn.request("GET", url, headers={"Range": rng} if rng else {})
    response = conn.getresponse()
    if response.status >= 300:
        raise RuntimeError(f"{url}: {response.status} {response.read()[:200]!r}")
    got = 0
    while n := response.readinto(buf[got:]):
        got += n
    return got


def status_rate(port: int, uri: str, clients: int, seconds: float) -> float:
    counts = [0] * clients
    stop_at = time.monotonic() + seconds

    def run(i: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port)
        buf = memoryview(bytearray(64 * KB))
        while time.monotonic() < stop_at:
            get(conn, f"/v1/status?path={uri}", buf)
            counts[i] += 1
        conn.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(counts) / seconds


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(pid: int, port: int, uri: str, size: int) -> dict[str, float]:
    conn = http.client.HTTPConnection("127.0.0.1", port)
    buf = memoryview(bytearray(size))
    started = time.perf_counter()
    get(conn, f"/v1/read?path={uri}", buf)  # cold: fill every page
    cold = size / (time.perf_counter() - started) / 1e9
    started, cpu = time.perf_counter(), cpu_seconds(pid)
    for _ in range(3):
        get(conn, f"/v1/read?path={uri}", buf)
    seq = 3 * size / (time.perf_counter() - started) / 1e9
    seq_cpu = (cpu_seconds(pid) - cpu) / (3 * size / MB) * 1e3
    rng = random.Random(7)
    times = []
    cpu = cpu_seconds(pid)
    for _ in range(300):
        offset = rng.randrange(0, size - 64 * KB)
        started = time.perf_counter()
        get(conn, f"/v1/read?path={uri}", buf, f"bytes={offset}-{offset + 64 * KB - 1}")
        times.append(time.perf_counter() - started)
    random_cpu = (cpu_seconds(pid) - cpu) / len(times) * 1e6
    conn.close()
    cpu = cpu_seconds(pid)
    one = status_rate(port, uri, 1, 1.5)
    many = status_rate(port, uri, 16, 2.0)
    status_cpu = (cpu_seconds(pid) - cpu) / (one * 1.5 + many * 2.0) * 1e6
    return {
        "cold seq GB/s": cold,
        "seq GB/s": seq,
        "seq worker CPU ms/MB": seq_cpu,
        "random 64K p50 ms": statistics.median(times) * 1e3,
        "random 64K worker CPU us/read": random_cpu,
        "status/s 1 client": one,
        "status/s 16 clients": many,
        "status worker CPU us/call": status_cpu,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tree", type=Path, action="append", required=True)
    parser.add_argument("--mb", type=int, default=64)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="lean-bench-"))
    s3 = LocalS3(base / "s3", buckets=(BUCKET,)).start()
    try:
        s3.client().pipe(f"{BUCKET}/blob", os.urandom(args.mb * MB))
        run(args, base, s3, f"s3://{BUCKET}/blob")
    finally:
        s3.stop()
    return 0


def run(args: argparse.Namespace, base: Path, s3: LocalS3, uri: str) -> None:
    figures: dict[str, dict[str, list[float]]] = {str(t): {} for t in args.tree}
    for rep in range(args.reps):
        for i, tree in enumerate(args.tree):
            work = base / f"w{i}-{rep}"
            work.mkdir()
            process, port = start_worker(tree, work, s3)
            try:
                got = measure(process.pid, port, uri, args.mb * MB)
            finally:
                stop(process)
            print(tree, {k: round(v, 3) for k, v in got.items()}, flush=True)
            for name, value in got.items():
                figures[str(tree)].setdefault(name, []).append(value)
    for tree, named in figures.items():
        print(f"== {tree}")
        for name, values in named.items():
            print(f"  {name}: {statistics.median(values):.3f} "
                  f"({min(values):.3f}-{max(values):.3f})")  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
