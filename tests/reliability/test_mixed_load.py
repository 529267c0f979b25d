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
from tests.reliability.support import RecordFigure, Worker, content

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


class Traffic:
    """The shared state of the clients: what was written (by ETag), and what they saw.
    Thread-safe."""

    def __init__(self, scene: Scene, worker: Worker) -> None:
        self.scene, self.worker = scene, worker
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
            self.note(kind, describe(answer), answer.status_code in EXPECTED[kind])
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


def test_sixty_four_clients_of_mixed_traffic(
    scene: Scene, soak: bool, figure: RecordFigure
) -> None:
    # As many uploads at once as there are clients: the cap's 503 (tested on its own in
    # test_hostile_requests) is not what this test looks for.
    worker = scene.worker(
        "dora.worker.page.store.page.size=64KB",
        f"dora.worker.http.max.concurrent.uploads={CLIENTS}",
    )
    traffic = Traffic(scene, worker)
    rng = random.Random(0)
    for uri in traffic.uris:
        scene.put(uri, traffic.new_content(rng))
    seconds = 600.0 if soak else 15.0
    samples = [worker.rss_bytes()]
    sampler = threading.Thread(target=sample_rss, args=(worker, traffic.stop, samples))
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
    internal = worker.metric('dora_errors_total{code="InternalError"}')
    # Growth in the second half, once caches, pools and arenas have warmed up, is what a leak
    # would show.
    half = samples[len(samples) // 2]
    figure("seconds of traffic", seconds, "s")
    figure("calls answered", sum(traffic.answers.values()), "")
    for what, count in sorted(traffic.answers.items()):
        figure(what, count, "")
    for what, rss in (
        ("at start", samples[0]),
        ("half way", half),
        ("at the end", samples[-1]),
        ("peak", max(samples)),
        ("growth in the second half", samples[-1] - half),
    ):
        figure(f"worker RSS {what}", rss / 2**20, "MiB")
    assert traffic.wrong == []
    assert internal == 0
    assert worker.get("/healthz").status_code == 200
