"""One S3 object grown, shrunk and replaced (same size, new bytes) over and over, by an outside
writer and through the worker, while readers read it: REST readers against a worker process,
and ``dora`` fsspec clients that carry on through their UFS fallback once the worker is
SIGKILLed mid-run. Every read returns the bytes of exactly one version — never a mix — and a
REST answer's bytes are those of the version its ``X-Dora-Version`` names."""

from __future__ import annotations

import functools
import hashlib
import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import httpx
import pytest

from config import load_config
from tests.reliability.conftest import Scene, s3_defines
from tests.reliability.support import RecordFigure, Worker, content, wait_for
from worker.client import DoraFileSystem
from worker.client.errors import DoraError
from worker.keys import build_registry

pytestmark = pytest.mark.reliability

KB = 1 << 10
PAGE = 16 * KB
CHUNK = 16 * KB  # the client's read chunk: a read of a few pages takes several requests
# Grow, shrink, and same-size replacements (pairs of sizes), up to a dozen pages.
SIZES = (25 * KB, 75 * KB, 75 * KB, 175 * KB, 175 * KB, 40 * KB, 1, 125 * KB, 125 * KB, 16 * KB)
LONGEST = max(SIZES)
REST_READERS = 4
CLIENT_READERS = 4


@dataclass
class Outcomes:
    """What the readers saw; ``wrong`` is what must stay empty. Thread-safe."""

    verified: Counter[str] = field(default_factory=Counter)
    tolerated: Counter[str] = field(default_factory=Counter)
    wrong: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def ok(self, kind: str) -> None:
        with self.lock:
            self.verified[kind] += 1

    def tolerate(self, kind: str) -> None:
        with self.lock:
            self.tolerated[kind] += 1

    def fail(self, what: str) -> None:
        with self.lock:
            self.wrong.append(what)


def within(rng: random.Random) -> int:
    """An offset inside a version picked at random (so most reads fall inside the file)."""
    return rng.randrange(rng.choice(SIZES))


class Versions:
    """The contents the object takes, by version (the S3 ETag: their md5)."""

    def __init__(self, uri: str) -> None:
        self.contents = [content(f"{uri}-{n}", size) for n, size in enumerate(SIZES)]
        self.by_etag = {hashlib.md5(c).hexdigest(): c for c in self.contents}

    def one_of(self, data: bytes, start: int, end: int | None) -> bool:
        """Whether ``data`` is ``[start, end)`` of one version (cut at its end)."""
        return any(data == c[start:end] for c in self.contents)


@dataclass
class Run:
    """One run: the object, its versions, the worker, and the events that end the phases."""

    uri: str
    versions: Versions
    worker: Worker
    scene: Scene
    out: Outcomes = field(default_factory=Outcomes)
    written: Counter[str] = field(default_factory=Counter)
    stop: threading.Event = field(default_factory=threading.Event)
    worker_gone: threading.Event = field(default_factory=threading.Event)

    def rest_reader(self, seed: int) -> None:
        rng = random.Random(seed)
        while not self.worker_gone.is_set():
            start, length = within(rng), rng.randrange(64, LONGEST // 2)
            params: dict[str, str | int] = {"offset": start, "length": length}
            params["sync_interval"] = rng.choice(["0", "0", "100", "-1"])
            if rng.random() < 0.2:
                params["version"] = rng.choice(list(self.versions.by_etag))
            try:
                answer = self.worker.read(self.uri, **params)
            except httpx.TransportError as exc:
                # A body cut short is how a change found mid-stream is told; after the kill,
                # the worker is gone.
                gone = self.worker_gone.is_set()
                self.out.tolerate("rest: worker gone" if gone else f"rest: {type(exc).__name__}")
                continue
            if answer.status_code in (412, 416):
                self.out.tolerate(f"rest: {answer.status_code}")
                continue
            self._check_rest(answer, params, start, length)

    def _check_rest(
        self, answer: httpx.Response, params: dict[str, str | int], start: int, length: int
    ) -> None:
        label = answer.headers.get("X-Dora-Version", "")
        served = self.versions.by_etag.get(label)
        if answer.status_code != 200 or served is None or params.get("version", label) != label:
            self.out.fail(f"rest {params}: {answer.status_code} {label!r} {answer.text[:80]!r}")
        elif answer.content != served[start : start + length]:
            self.out.fail(f"rest {params}: the bytes are not those of version {label}")
        else:
            self.out.ok("rest")

    def client_reader(self, fs: DoraFileSystem, seed: int) -> None:
        rng = random.Random(seed)
        while not self.stop.is_set():
            whole = rng.random() < 0.3
            start = 0 if whole else within(rng)
            end = None if whole else start + rng.randrange(64, LONGEST)
            try:
                if whole:
                    with fs.open(self.uri, "rb") as handle:
                        data = handle.read()
                else:
                    data = fs.cat_file(self.uri, start, end)
            except DoraError as exc:
                self.out.tolerate(f"client: {type(exc).__name__}")
                continue
            if self.versions.one_of(data, start, end):
                self.out.ok("client")
            else:
                how = "through the UFS fallback" if self.worker_gone.is_set() else "worker up"
                self.out.fail(f"client [{start}, {end}) ({how}): {len(data)} bytes of no version")

    def writer(self) -> None:
        rng = random.Random(self.uri)
        current = 0
        while not self.stop.is_set():
            current = rng.choice([n for n in range(len(SIZES)) if n != current])
            data = self.versions.contents[current]
            if self.worker_gone.is_set() or rng.random() < 0.5:
                self.scene.put(self.uri, data)
                self.written["outside"] += 1
            else:
                self._write_through_worker(data)
            time.sleep(rng.uniform(0, 0.03))

    def _write_through_worker(self, data: bytes) -> None:
        url = self.worker.url + "/v1/write"
        try:
            self.worker.http.put(url, params={"path": self.uri}, content=data).raise_for_status()
        except httpx.TransportError:
            return  # the kill landed during the write
        self.written["worker"] += 1


def make_client(worker: Worker, scene: Scene) -> DoraFileSystem:
    """A ``dora`` filesystem on the worker, reading in small chunks, whose UFS fallback reaches
    S3 through the proxy."""
    defines = [
        f"dora.user.workers={worker.address}",
        f"dora.user.client.read.chunk.size={CHUNK}",
        "dora.user.client.read.parallelism=4",
        *s3_defines(scene.server, scene.proxy.url),
    ]
    config = load_config(build_registry(), environ={}, defines=defines)
    return DoraFileSystem(config=config, sync_interval=0, skip_instance_cache=True)


def fallbacks(clients: list[DoraFileSystem]) -> int:
    return sum(fs.fallback_stats().ufs_fallbacks for fs in clients)


def test_every_read_is_one_version_while_the_file_changes(
    scene: Scene, soak: bool, figure: RecordFigure
) -> None:
    # A slower link widens the gaps between a status and the read that follows it.
    scene.proxy.latency = 0.01
    uri = f"{scene.prefix}/changing.bin"
    versions = Versions(uri)
    scene.put(uri, versions.contents[0])
    worker = scene.worker(f"dora.worker.page.store.page.size={PAGE}")
    clients = [make_client(worker, scene) for _ in range(CLIENT_READERS)]
    # Warm up (the worker's first S3 call builds its client), so the phases are all traffic.
    assert clients[0].cat_file(uri) == versions.contents[0]
    run = Run(uri, versions, worker, scene)
    phase = 120.0 if soak else 8.0
    tasks: list[Callable[[], None]] = [run.writer]
    tasks += [functools.partial(run.rest_reader, n) for n in range(REST_READERS)]
    tasks += [functools.partial(run.client_reader, fs, 100 + n) for n, fs in enumerate(clients)]
    with ThreadPoolExecutor(len(tasks)) as pool:
        running = [pool.submit(task) for task in tasks]
        try:
            time.sleep(phase)
            run.worker_gone.set()
            worker.kill()  # the clients go on through their UFS fallback
            # Each client's first fallback builds its own S3 client: the phase starts after.
            wait_for(lambda: fallbacks(clients) >= CLIENT_READERS, "the first UFS fallbacks")
            time.sleep(phase)
        finally:
            run.worker_gone.set()
            run.stop.set()
        for task in running:
            task.result()
    out, written = run.out, run.written
    figure("versions written outside", written["outside"], "")
    figure("versions written through the worker", written["worker"], "")
    for kind, count in sorted(out.verified.items()):
        figure(f"reads verified ({kind})", count, "")
    for kind, count in sorted(out.tolerated.items()):
        figure(f"reads refused or cut ({kind})", count, "")
    figure("client reads through the UFS fallback", fallbacks(clients), "")
    assert out.wrong == []
    assert out.verified["rest"] > 0 and out.verified["client"] > 0
