"""SIGKILL while pages are in flight: during cold reads, and during a load job, round after
round, with a restart on the same metastore and page dirs each time. Every read that completed
was right; at the end every file read through the restarted worker matches the UFS bytes
(pages and statuses that survived the kills included)."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
import s3fs

from tests.reliability.conftest import MakeWorker
from tests.reliability.support import RecordFigure, Worker, content, digest, wait_for
from worker.netproxy import TcpProxy

pytestmark = pytest.mark.reliability

PAGE = 64 << 10
FILES_PER_SET = 6
READERS = 6


def write_set(outside: s3fs.S3FileSystem, directory: str, rng: random.Random) -> dict[str, bytes]:
    files = {}
    for n in range(FILES_PER_SET):
        uri = f"{directory}/f{n}.bin"
        files[uri] = content(uri, rng.randrange(3 * PAGE, 10 * PAGE))
        outside.pipe_file(uri.removeprefix("s3://"), files[uri])
    return files


def page_gets(proxy: TcpProxy, directory: str) -> int:
    key = "/" + directory.removeprefix("s3://") + "/"
    return sum(r.method == "GET" and r.target.startswith(key) for r in proxy.requests())


def kill_after_gets(
    worker: Worker, proxy: TcpProxy, directory: str, files: dict[str, bytes]
) -> None:
    """SIGKILL the worker once it has fetched 40% of the pages under ``directory``."""
    pages = sum(-(-len(data) // PAGE) for data in files.values())
    wait_for(lambda: page_gets(proxy, directory) >= 0.4 * pages, f"page GETs under {directory}")
    worker.kill()


def read_until_killed(
    worker: Worker, files: dict[str, bytes], seed: int, killed: threading.Event
) -> tuple[int, list[str]]:
    """Random ranged reads until the worker is gone: (reads verified, wrong answers)."""
    rng = random.Random(seed)
    verified, wrong = 0, []
    while not killed.is_set():
        uri = rng.choice(sorted(files))
        data = files[uri]
        offset = rng.randrange(len(data))
        length = rng.randrange(1, len(data) - offset + 1)
        try:
            answer = worker.read(uri, offset=offset, length=length)
        except httpx.TransportError:
            break  # the kill: a refused connect, or a body cut short (never a short body)
        if answer.status_code != 200 or answer.content != data[offset : offset + length]:
            wrong.append(f"{uri} [{offset}+{length}]: {answer.status_code}")
        verified += 1
    return verified, wrong


def kill_during_reads(
    worker: Worker, proxy: TcpProxy, directory: str, files: dict[str, bytes], seed: int
) -> tuple[int, list[str]]:
    killed = threading.Event()
    with ThreadPoolExecutor(READERS) as pool:
        runs = [
            pool.submit(read_until_killed, worker, files, seed + n, killed) for n in range(READERS)
        ]
        try:
            kill_after_gets(worker, proxy, directory, files)
        finally:
            killed.set()
        results = [run.result() for run in runs]
    return sum(r[0] for r in results), [w for r in results for w in r[1]]


def kill_during_load(
    worker: Worker, proxy: TcpProxy, directory: str, files: dict[str, bytes]
) -> None:
    job = worker.http.post(worker.url + "/v1/load", params={"path": directory, "recursive": "true"})
    assert job.status_code == 202, job.text
    kill_after_gets(worker, proxy, directory, files)


def timed(action: Callable[[], object]) -> float:
    started = time.monotonic()
    action()
    return time.monotonic() - started


def test_sigkill_during_cold_reads_and_load_jobs_loses_nothing(
    outside: s3fs.S3FileSystem,
    prefix: str,
    proxy: TcpProxy,
    s3_worker: MakeWorker,
    soak: bool,
    figure: RecordFigure,
) -> None:
    proxy.latency = 0.005  # a slower link, so the kills land while pages are in flight
    worker = s3_worker(f"dora.worker.page.store.page.size={PAGE}")
    rng = random.Random(prefix)
    rounds = 10 if soak else 2
    written: dict[str, bytes] = {}
    verified, wrong, restarts = 0, [], []
    for n in range(rounds):
        reads = write_set(outside, f"{prefix}/round-{n}/read", rng)
        written.update(reads)
        done, bad = kill_during_reads(worker, proxy, f"{prefix}/round-{n}/read", reads, n * 100)
        verified, wrong = verified + done, wrong + bad
        restarts.append(timed(worker.start))
        loads = write_set(outside, f"{prefix}/round-{n}/load", rng)
        written.update(loads)
        kill_during_load(worker, proxy, f"{prefix}/round-{n}/load", loads)
        restarts.append(timed(worker.start))
    assert wrong == []
    before = worker.stats()
    mismatched = [
        uri
        for uri, data in written.items()
        if digest(worker.read(uri).raise_for_status().content) != digest(data)
    ]
    after = worker.stats()
    assert mismatched == []
    figure("SIGKILLs (half during cold reads, half during load jobs)", 2 * rounds, "")
    figure("reads verified while the kills happened", verified, "")
    figure("files compared in full after the last restart", len(written), "")
    survived = after["bytes_from_cache"] - before["bytes_from_cache"]
    figure("bytes of the final compare served from pages that survived", survived, "B")
    figure("restart to listening (mean)", sum(restarts) / len(restarts), "s")
