"""What TLS costs (issue 25): warm read throughput and status latency through the dora client
against the same worker setup over HTTP and over HTTPS, side by side in one run, plus warm
reads with the same-host short-circuit on (which reads cached pages from the page files and
asks the worker over HTTP(S) only for their locations).

    .venv/bin/python -m bench.experiments.tls_bench --mb 64 --reps 3

Two worker processes over one local directory (no object store in the figures), one plain and
one with a throwaway certificate (ECDSA P-256, made with ``cryptography``); the two alternate
within every repetition, so they share the machine's state. Figures: median (min-max) of the
repetitions; each repetition's figure is the median of its own rounds. The CPU seconds the
worker and the client spend per GB of warm reads (over HTTP(S), all rounds of a repetition)
are the figures that hold on a shared machine, where a rate follows the load.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from tests.integration.harness import WorkerProcess
from tests.integration.tls.tls_support import tls_defines
from tests.worker.tls.certs import CA
from worker.client.filesystem import DoraFileSystem

MB = 1 << 20
STATUS_CALLS = 2000


def client(worker: WorkerProcess, ca: CA, short_circuit: bool) -> DoraFileSystem:
    return DoraFileSystem(
        workers=[worker.url()], tls_ca_file=str(ca.file), short_circuit=short_circuit,
        near_cache=False, sync_interval=-1, skip_instance_cache=True,
    )  # fmt: skip


def read_rate(fs: DoraFileSystem, uri: str, size: int, rounds: int = 5) -> float:
    """MB/s of whole-file warm reads: the median of ``rounds``."""
    rates = []
    for _ in range(rounds):
        start = time.perf_counter()
        data = fs.cat_file(uri)
        rates.append(size / MB / (time.perf_counter() - start))
        assert len(data) == size
    return statistics.median(rates)


def process_cpu(pid: int) -> float:
    """CPU seconds (user + system) process ``pid`` has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def status_ms(fs: DoraFileSystem, uri: str) -> float:
    """The median latency of a warm status call, in ms."""
    times = []
    for _ in range(STATUS_CALLS):
        start = time.perf_counter()
        fs.info(uri)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def summary(values: list[float]) -> str:
    return f"{statistics.median(values):,.3g} ({min(values):,.3g}-{max(values):,.3g})"


def read_figures(
    fs: DoraFileSystem, worker: WorkerProcess, uri: str, size: int, rounds: int = 5
) -> dict[str, float]:
    """:func:`read_rate`'s MB/s, with the CPU seconds the worker and the client (all of this
    process's threads) spent per GB over its rounds."""
    worker_before, client_before = process_cpu(worker.process.pid), own_cpu()
    rate = read_rate(fs, uri, size, rounds)
    gigabytes = rounds * size / (1 << 30)
    return {
        "warm read, MB/s": rate,
        "warm read, worker CPU s/GB": (process_cpu(worker.process.pid) - worker_before) / gigabytes,
        "warm read, client CPU s/GB": (own_cpu() - client_before) / gigabytes,
    }


def measure(workers: dict[str, WorkerProcess], ca: CA, uri: str, size: int, reps: int) -> None:
    clients = {(s, sc): client(w, ca, sc) for s, w in workers.items() for sc in (False, True)}
    probes: list[Callable[[str], dict[str, float]]] = [
        lambda s: read_figures(clients[s, False], workers[s], uri, size),
        lambda s: {"warm read with short-circuit, MB/s": read_rate(clients[s, True], uri, size)},
        lambda s: {"status p50, ms": status_ms(clients[s, False], uri)},
    ]
    for fs in clients.values():
        fs.cat_file(uri)  # fills the cache, opens the connections
    figures: dict[str, dict[str, list[float]]] = {}
    for _ in range(reps):
        for run in probes:
            for scheme in workers:
                for row, value in run(scheme).items():
                    figures.setdefault(row, {}).setdefault(scheme, []).append(value)
    print("| measure | HTTP | HTTPS | HTTPS / HTTP |")
    print("|---|---|---|---|")
    for row, by_scheme in figures.items():
        http, https = by_scheme["http"], by_scheme["https"]
        ratio = statistics.median(https) / statistics.median(http)
        print(f"| {row} | {summary(http)} | {summary(https)} | {ratio:.2f}x |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=64, help="size of the file read")
    parser.add_argument("--reps", type=int, default=3, help="repetitions (at least 3)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="dora-tls-bench-") as scratch:
        root = Path(scratch)
        data = root / "data"
        data.mkdir()
        size = args.mb * MB
        (data / "f.bin").write_bytes(os.urandom(size))
        ca = CA(root / "ca")
        common = [f"dora.worker.ufs.roots=file://{data}", "dora.worker.page.store.sizes=2GB"]
        workers = {
            "http": WorkerProcess(root / "http", *common),
            "https": WorkerProcess(root / "https", *common, *tls_defines(ca.issue("server"))),
        }
        try:
            print(f"{args.mb} MB file, {args.reps} repetitions, load {os.getloadavg()[0]:.1f}")
            measure(workers, ca, f"file://{data}/f.bin", size, max(3, args.reps))
        finally:
            for worker in workers.values():
                worker.stop()


if __name__ == "__main__":
    main()
