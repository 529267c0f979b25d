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

from tests.reliability.conftest import Scene
from tests.reliability.support import RecordFigure, Worker, content, digest, wait_for

pytestmark = pytest.mark.reliability

PAGE = 64 << 10
FILES_PER_SET = 6
READERS = 6


def write_set(scene: Scene, directory: str, rng: random.Random) -> dict[str, bytes]:
    files = {}
    for n in range(FILES_PER_SET):
        uri = f"{directory}/f{n}.bin"
        files[uri] = content(uri, rng.randrange(3 * PAGE, 10 * PAGE))
        scene.put(uri, files[uri])
    return files


def kill_after_gets(worker: Worker, scene: Scene, directory: str, files: dict[str, bytes]) -> None:
    """SIGKILL the worker once it has fetched 40% of the bytes under ``directory`` (a GET may
    carry a run of pages)."""
    total = sum(len(data) for data in files.values())

    def fetched() -> bool:
        gets = [r for r in scene.requests(directory) if r.method == "GET"]
        return sum(ranged_bytes(r.range) for r in gets) >= 0.4 * total

    wait_for(fetched, f"40% of the bytes under {directory}")
    worker.kill()


def ranged_bytes(header: str | None) -> int:
    """The bytes a GET's ``Range: bytes=first-last`` asks for; a page for a GET without one."""
    if header is None:
        return PAGE
    first, _, last = header.removeprefix("bytes=").partition("-")
    return int(last) - int(first) + 1


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
    worker: Worker, scene: Scene, directory: str, files: dict[str, bytes], seed: int
) -> tuple[int, list[str]]:
    killed = threading.Event()
    with ThreadPoolExecutor(READERS) as pool:
        runs = [
            pool.submit(read_until_killed, worker, files, seed + n, killed) for n in range(READERS)
        ]
        try:
            kill_after_gets(worker, scene, directory, files)
        finally:
            killed.set()
        results = [run.result() for run in runs]
    return sum(r[0] for r in results), [w for r in results for w in r[1]]


def kill_during_load(worker: Worker, scene: Scene, directory: str, files: dict[str, bytes]) -> None:
    job = worker.http.post(worker.url + "/v1/load", params={"path": directory, "recursive": "true"})
    assert job.status_code == 202, job.text
    kill_after_gets(worker, scene, directory, files)


def timed(action: Callable[[], object]) -> float:
    started = time.monotonic()
    action()
    return time.monotonic() - started


def test_sigkill_during_cold_reads_and_load_jobs_loses_nothing(
    scene: Scene, soak: bool, figure: RecordFigure
) -> None:
    scene.proxy.latency = 0.005  # a slower link, so the kills land while pages are in flight
    worker = scene.worker(f"dora.worker.page.store.page.size={PAGE}")
    rng = random.Random(scene.prefix)
    rounds = 10 if soak else 2
    written: dict[str, bytes] = {}
    verified, wrong, restarts = 0, [], []
    for n in range(rounds):
        directory = f"{scene.prefix}/round-{n}"
        reads = write_set(scene, f"{directory}/read", rng)
        written.update(reads)
        done, bad = kill_during_reads(worker, scene, f"{directory}/read", reads, n * 100)
        verified, wrong = verified + done, wrong + bad
        restarts.append(timed(worker.start))
        loads = write_set(scene, f"{directory}/load", rng)
        written.update(loads)
        kill_during_load(worker, scene, f"{directory}/load", loads)
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
