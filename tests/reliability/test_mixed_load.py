"""64 clients of mixed traffic — status, list, read, write, delete on a small set of S3 objects —
against one worker process for a while, its resident memory sampled from /proc. Each client is a
thread with an HTTP client of its own (``Worker.http``; see ``support.ThreadClients`` for why
threads do not share one). Every answer
is one the call can expect (a 404 for a file deleted meanwhile, a 412 or a cut body for one
replaced mid-read, a 416 for one that shrank), every 200 read carries the bytes of the version
it names, and the memory growth is reported."""

from __future__ import annotations

import hashlib
import random
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.reliability.conftest import Scene
from tests.reliability.memory import MemoryRecord
from tests.reliability.support import RecordFigure, Worker, content
from worker.memtrace import TRACE_FRAMES, TRACE_INTERVAL

pytestmark = pytest.mark.reliability

CLIENTS = 64
DIRS, FILES_PER_DIR = 4, 10
EXPECTED = {
    "status": {200, 404},
    "list": {200, 404},
    "read": {200, 404, 412, 416},
    "write": {200, 201},
    "delete": {200, 404},
}
# What the worker's memory tracing splits its memory into (worker/memtrace.py), and how many of
# the allocation sites that grew most a soak reports.
SPLIT = ("rss_anon", "rss_file", "malloc_in_use", "malloc_free", "malloc_mmapped", "python_blocks")
TRACED = ("python_traced", "tracemalloc_overhead")
SITES = 5
# Python's live blocks (objects and buffers) at the end of a soak's second half may exceed those
# half way by this share at most. Measured (RELIABILITY.md, issue 36 item 9): +2 % and +6 % in
# the second half of two 1800 s soaks; a leak of three blocks per call would add more in the
# second half of the 600 s soak at ~300 calls/s. The resident set is reported, not bounded: it
# creeps with the allocator's fragmentation, which depends on the machine's load, not the code.
LEAK_SHARE = 0.25


class Traffic:
    """The shared state of the clients: what was written (by ETag), and what they saw.
    Thread-safe."""

    def __init__(self, scene: Scene, worker: Worker, traced: bool = False) -> None:
        self.scene, self.worker = scene, worker
        # A worker tracing its allocations stands still for seconds while it takes a snapshot,
        # past the deadlines of the UFS calls it had under way: those answer 503.
        self.expected = (
            {kind: codes | {503} for kind, codes in EXPECTED.items()} if traced else EXPECTED
        )
        self.dirs = [f"{scene.prefix}/d{n}" for n in range(DIRS)]
        self.uris = [f"{d}/f{n}.bin" for d in self.dirs for n in range(FILES_PER_DIR)]
        self.lock = threading.Lock()
        self.written: dict[str, tuple[str, int]] = {}  # etag -> (seed, size)
        self.answers: Counter[str] = Counter()
        self.wrong: list[str] = []
        self.stop = threading.Event()

    def new_content(self, rng: random.Random) -> bytes:
        seed, size = f"{rng.random()}", rng.randrange(1, 200_000)
        data = content(seed, size)
        with self.lock:
            self.written[hashlib.md5(data).hexdigest()] = (seed, size)
        return data

    def client(self, seed: int) -> None:
        rng = random.Random(seed)
        calls = [self.status, self.listing, self.read, self.read, self.write, self.delete]
        while not self.stop.is_set():
            call = rng.choice(calls)
            try:
                kind, answer = call(rng)
            except httpx.TransportError as exc:
                # Only a read may be cut short (its file changed mid-stream).
                self.note(call.__name__, f"cut ({type(exc).__name__})", call == self.read)
                continue
            self.note(kind, describe(answer), answer.status_code in self.expected[kind])
            if kind == "read" and answer.status_code == 200:
                self.check_bytes(answer)

    def note(self, kind: str, what: str, expected: bool) -> None:
        with self.lock:
            self.answers[f"{kind} {what}"] += 1
            if not expected:
                self.wrong.append(f"{kind}: {what}")

    def check_bytes(self, answer: httpx.Response) -> None:
        with self.lock:
            seed, size = self.written.get(answer.headers["X-Dora-Version"], ("", -1))
        offset = int(answer.request.url.params.get("offset", "0"))
        if answer.content != content(seed, size)[offset : offset + len(answer.content)]:
            self.note("read", "bytes of no version it names", False)

    def status(self, rng: random.Random) -> tuple[str, httpx.Response]:
        path, sync = rng.choice(self.uris), rng.choice(["0", "-1"])
        return "status", self.worker.get("/v1/status", path=path, sync_interval=sync)

    def listing(self, rng: random.Random) -> tuple[str, httpx.Response]:
        path, sync = rng.choice(self.dirs), rng.choice(["0", "-1"])
        return "list", self.worker.get("/v1/list", path=path, sync_interval=sync)

    def read(self, rng: random.Random) -> tuple[str, httpx.Response]:
        path, sync = rng.choice(self.uris), rng.choice(["0", "-1"])
        offset = rng.choice([0, rng.randrange(100_000)])
        return "read", self.worker.read(path, offset=offset, sync_interval=sync)

    def write(self, rng: random.Random) -> tuple[str, httpx.Response]:
        url, path = self.worker.url + "/v1/write", rng.choice(self.uris)
        return "write", self.worker.http.put(
            url, params={"path": path}, content=self.new_content(rng)
        )

    def delete(self, rng: random.Random) -> tuple[str, httpx.Response]:
        url, path = self.worker.url + "/v1/delete", rng.choice(self.uris)
        return "delete", self.worker.http.delete(url, params={"path": path})


def describe(answer: httpx.Response) -> str:
    """``200``, or ``404 NotFound``: the status and, for an error, its code."""
    if answer.is_success:
        return str(answer.status_code)
    return f"{answer.status_code} {answer.json().get('error')}"


def sample_rss(worker: Worker, stop: threading.Event, samples: list[int]) -> None:
    while not stop.wait(1.0):
        samples.append(worker.rss_bytes())


def run(traffic: Traffic, seconds: float) -> list[int]:
    """The 64 clients for ``seconds``; the worker's RSS sampled every second meanwhile."""
    samples = [traffic.worker.rss_bytes()]
    sampler = threading.Thread(target=sample_rss, args=(traffic.worker, traffic.stop, samples))
    sampler.start()
    with ThreadPoolExecutor(CLIENTS) as pool:
        clients = [pool.submit(traffic.client, n) for n in range(CLIENTS)]
        try:
            time.sleep(seconds)
        finally:
            traffic.stop.set()
        for client in clients:
            client.result()
    sampler.join()
    return samples


def report_memory(
    record: MemoryRecord, traffic_from: float, traffic_to: float, figure: RecordFigure
) -> None:
    """The worker's own memory figures over each half of the traffic (times in seconds since
    its tracing started), and the allocation sites that grew most in each."""
    start, half, end = (
        record.at(traffic_from),
        record.at((traffic_from + traffic_to) / 2),
        record.at(traffic_to),
    )
    for name, first, last in (("first half", start, half), ("second half", half, end)):
        for what in SPLIT + (TRACED if record.traced else ()):
            grown = record.growth(first, last, what)
            if what == "python_blocks":
                figure(f"python blocks allocated, growth in the {name}", grown, "")
            else:
                figure(f"{what} growth in the {name}", grown / 2**20, "MiB")
        if record.traced:
            for where, size, blocks in record.grown_sites(first, last, SITES):
                figure(f"python heap growth in the {name} at {where} ({blocks:+d} blocks)",
                       size / 2**10, "KiB")  # fmt: skip
            report = record.directory / f"grown-{name.replace(' ', '-')}.txt"
            report.write_text(record.report(first, last, SITES * 3))


def test_sixty_four_clients_of_mixed_traffic(
    scene: Scene,
    soak: bool,
    soak_seconds: float | None,
    soak_tracemalloc: int,
    figure: RecordFigure,
) -> None:
    seconds = (soak_seconds or 600.0) if soak else 15.0
    # As many uploads at once as there are clients: the cap's 503 (tested on its own in
    # test_hostile_requests) is not what this test looks for. A soak has the worker write
    # its memory figures (worker/memtrace.py) about twenty times over the traffic.
    trace = [
        f"{TRACE_INTERVAL.name}={max(5, round(seconds / 20))}s",
        f"{TRACE_FRAMES.name}={soak_tracemalloc}",
    ]
    worker = scene.worker(
        "dora.worker.page.store.page.size=64KB",
        f"dora.worker.http.max.concurrent.uploads={CLIENTS}",
        *(trace if soak else []),
    )
    traced_from = time.monotonic()
    traffic = Traffic(scene, worker, traced=soak and soak_tracemalloc > 0)
    rng = random.Random(0)
    for uri in traffic.uris:
        scene.put(uri, traffic.new_content(rng))
    traffic_from = time.monotonic() - traced_from
    samples = run(traffic, seconds)
    traffic_to = time.monotonic() - traced_from
    internal = worker.metric('dora_errors_total{code="InternalError"}')
    figure("seconds of traffic", seconds, "s")
    figure("calls answered", sum(traffic.answers.values()), "")
    for what, count in sorted(traffic.answers.items()):
        figure(what, count, "")
    report_rss(samples, figure)
    if soak:
        record = MemoryRecord(worker.work)
        report_memory(record, traffic_from, traffic_to, figure)
        half, end = record.at((traffic_from + traffic_to) / 2), record.at(traffic_to)
        blocks = record.lines[half]["python_blocks"]
        assert record.growth(half, end, "python_blocks") < LEAK_SHARE * blocks
    assert traffic.wrong == []
    assert internal == 0
    assert worker.get("/healthz").status_code == 200


def report_rss(samples: list[int], figure: RecordFigure) -> None:
    """The worker's RSS (sampled every second) at the start, the end, and the boundaries of the
    halves and thirds of the traffic, and its growth over each. Growth late in the run, once
    caches, pools and the allocator's heaps have warmed up, is what a leak would show."""
    at = {
        f"{n}/{parts}": samples[len(samples) * n // parts] for n, parts in ((1, 2), (1, 3), (2, 3))
    }
    start, end = samples[0], samples[-1]
    figure("worker RSS at start", start / 2**20, "MiB")
    for name in ("1/3", "1/2", "2/3"):
        figure(f"worker RSS at {name} of the traffic", at[name] / 2**20, "MiB")
    figure("worker RSS at the end", end / 2**20, "MiB")
    figure("worker RSS peak", max(samples) / 2**20, "MiB")
    for name, first, last in (
        ("first half", start, at["1/2"]),
        ("second half", at["1/2"], end),
        ("first third", start, at["1/3"]),
        ("second third", at["1/3"], at["2/3"]),
        ("last third", at["2/3"], end),
    ):
        figure(f"worker RSS growth in the {name}", (last - first) / 2**20, "MiB")
