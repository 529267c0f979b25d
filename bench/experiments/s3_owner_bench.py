"""A GET served by the key's owner for another worker against a GET from the owner itself
(issue 33's goal: at least 0.8x), warm, side by side in one run.

Run with ``PYTHONPATH=$PWD .venv/bin/python -m bench.experiments.s3_owner_bench`` (``--reps``,
``--requests``, ``--large``, ``--profile``). Starts a real etcd and two ``dora worker start``
processes joined through it, each with its S3 endpoint on (the same key pair) over one local
directory (the store is not what is measured), writes a 64 MB file, finds its owner on the ring,
warms the owner's cache, then per round, interleaved, on one keep-alive connection each, the
requests signed as boto3 signs them (before the clock starts):
- ``large``: the whole file, ``--large`` times (MiB/s), from the owner and from the other
  worker (which passes it to the owner and relays the answer);
- ``range``: 64 KiB at spread offsets, ``--requests`` times, p50 latency (ms), both ways.
Prints each figure's median and min-max over ``--reps`` rounds and the ratios. ``--profile
large|range`` records both workers with py-spy under forwarded GETs of that kind
(``bench/out/``)."""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from bench.experiments.s3_endpoint_bench import (
    KEY_ID,
    RANGE,
    SECRET,
    SIZE,
    _free_port,
    large,
    ranged,
    signed,
)
from worker.common.ring import HashRing
from worker.devlab.local.etcd import LocalEtcd

VIRTUAL_NODES = 200  # dora.user.client.virtual.nodes' default: the ring the workers route by


def start_worker(base: Path, data: Path, etcd: str) -> tuple[subprocess.Popen[bytes], str, str]:
    """One cluster worker; it, its ring name (``127.0.0.1:port``) and its S3 URL."""
    state, port, s3_port = base / "state.json", _free_port(), _free_port()
    args = [sys.executable, "-m", "worker.cli.main", "worker", "start",
            f"-Ddora.work.dir={base / 'work'}", f"-Ddora.worker.http.port={port}",
            f"-Ddora.worker.ufs.roots=file://{data}", "-Ddora.worker.page.store.sizes=512MB",
            f"-Ddora.worker.s3.port={s3_port}", f"-Ddora.worker.s3.buckets=data=file://{data}",
            f"-Ddora.worker.s3.access.key.id={KEY_ID}", f"-Ddora.cluster.etcd.endpoints={etcd}",
            "--state-file", str(state)]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("DORA_")}
    env["DORA_WORKER_S3_SECRET_ACCESS_KEY"] = SECRET
    worker = subprocess.Popen(args, env=env, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not state.exists():
        if worker.poll() is not None or time.monotonic() > deadline:
            worker.kill()
            raise RuntimeError("the worker did not start")
        time.sleep(0.05)
    return worker, f"127.0.0.1:{port}", f"http://127.0.0.1:{s3_port}"


def served_by_owner(name: str) -> float:
    """The worker ``name``'s count of reads its key's owner answered."""
    text = httpx.get(f"http://{name}/metrics", timeout=10).text
    found = re.search(r'^dora_s3_owner_requests_total\{outcome="served"\} (\S+)$', text, re.M)
    return float(found.group(1)) if found else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--large", type=int, default=3)
    parser.add_argument("--profile", choices=("large", "range"),
                        help="py-spy both workers under forwarded GETs of this kind")  # fmt: skip
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as temp:
        base = Path(temp)
        data = base / "data"
        data.mkdir()
        (data / "big.bin").write_bytes(os.urandom(SIZE))
        etcd = LocalEtcd(base / "etcd").start()
        workers: list[tuple[subprocess.Popen[bytes], str, str]] = []
        try:
            for i in range(2):
                workers.append(start_worker(base / f"w{i}", data, etcd.endpoint))
            run(options, workers, f"file://{data}/big.bin")
        finally:
            for process, _, _ in workers:
                process.send_signal(signal.SIGTERM)
                process.wait(timeout=60)
            etcd.stop()


def run(
    options: argparse.Namespace, workers: list[tuple[subprocess.Popen[bytes], str, str]], uri: str
) -> None:
    owner_name = HashRing([name for _, name, _ in workers], VIRTUAL_NODES).owner(uri)
    owner = next(w for w in workers if w[1] == owner_name)
    other = next(w for w in workers if w[1] != owner_name)
    at_owner, at_other = f"{owner[2]}/data/big.bin", f"{other[2]}/data/big.bin"
    offsets = [(i * 7919 * RANGE) % (SIZE - RANGE) for i in range(options.requests)]
    figures: dict[str, list[float]] = {}
    with httpx.Client(timeout=120) as client:
        large(client, at_owner, signed(at_owner, {}), 1)  # warm every page at the owner
        deadline = time.monotonic() + 30
        while served_by_owner(other[1]) == 0:  # the other worker has listed the membership
            if time.monotonic() > deadline:
                raise RuntimeError("the other worker does not pass reads to the owner")
            large(client, at_other, signed(at_other, {}), 1)
            time.sleep(0.2)
        for _ in range(options.reps):
            for where, url in (("owner", at_owner), ("forwarded", at_other)):
                figures.setdefault(f"large {where} MiB/s", []).append(
                    large(client, url, signed(url, {}), options.large)
                )
                requests = [(url, signed(url, {"Range": f"bytes={o}-{o + RANGE - 1}"}))
                            for o in offsets]  # fmt: skip
                figures.setdefault(f"64KiB {where} p50 ms", []).append(ranged(client, requests))
        pids = [owner[0].pid, other[0].pid]
        few = [(at_other, signed(at_other, {"Range": f"bytes={o}-{o + RANGE - 1}"}))
               for o in offsets[:50]]  # fmt: skip
        if options.profile == "large":
            profile(pids, lambda: large(client, at_other, signed(at_other, {}), 1))
        elif options.profile == "range":
            profile(pids, lambda: ranged(client, few))
    for name, values in figures.items():
        print(f"{name:24s} {statistics.median(values):10.3f}  "
              f"[{min(values):.3f}-{max(values):.3f}]")  # fmt: skip
    median = {name: statistics.median(values) for name, values in figures.items()}
    print(f"forwarded / owner, 64 MB throughput: "
          f"{median['large forwarded MiB/s'] / median['large owner MiB/s']:.2f}x")  # fmt: skip
    print(f"owner / forwarded, 64 KiB p50 latency (speed ratio): "
          f"{median['64KiB owner p50 ms'] / median['64KiB forwarded p50 ms']:.2f}x")  # fmt: skip
    print(json.dumps({name: round(value, 3) for name, value in median.items()}))


def profile(pids: list[int], load: Callable[[], float]) -> None:
    """py-spy's raw profiles of ``pids`` under 20 s of ``load`` (bench/out/)."""
    out = Path("bench/out")
    out.mkdir(parents=True, exist_ok=True)
    spy = str(Path(sys.executable).with_name("py-spy"))
    recorders = [subprocess.Popen([spy, "record", "-p", str(pid), "-f", "raw", "-r", "200",
                                   "-d", "20", "-o", str(out / f"s3_owner_{pid}.txt")])
                 for pid in pids]  # fmt: skip
    time.sleep(1)
    deadline = time.monotonic() + 18
    while time.monotonic() < deadline:
        load()
    for recorder in recorders:
        recorder.wait()
    print(f"py-spy: {out}/s3_owner_{{{','.join(map(str, pids))}}}.txt")


if __name__ == "__main__":
    main()
