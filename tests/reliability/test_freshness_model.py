"""Freshness against a model of DESIGN.md's semantics: a seeded random walk of outside writes
and deletes, writes, deletes and invalidations through the worker, and statuses and reads with
``sync_interval`` 0 / N / -1 and ``version=``, run against a real worker over S3. Every answer
must be one the model allows; a read the model says needs no UFS call makes none (counted at
the proxy); and the versions a file is seen at never go back (monotonic reads).

The model, per file: the UFS content, the worker's cached status (a version, "missing" or
nothing) with the wall-clock window in which it was loaded, and the versions whose page is in
the store (files are one page). A change detected while reading (the UFS no longer has the
version the cached status names) records the new status, evicts the old pages, and — with no
``version=`` given — serves the new version (defect #5); with ``version=`` it answers 412.
"""

from __future__ import annotations

import dataclasses
import hashlib
import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import httpx
import pytest

from tests.reliability.conftest import Scene
from tests.reliability.support import RecordFigure, Worker, content

pytestmark = pytest.mark.reliability

UNKNOWN, MISSING = "unknown", "missing"
N_MS = 300  # the finite sync interval of the walk
SLACK_S = 0.05  # clock rounding between the test and the worker (same host, ms resolution)
FILES = 3

Cached = int | str  # a version index, MISSING, or UNKNOWN


@dataclass(frozen=True)
class FileState:
    ufs: int | None  # the content index the UFS has; None: no such object
    cached: Cached
    synced: tuple[float, float]  # when the cached status was loaded: within [lo, hi]
    pages: frozenset[int]


@dataclass(frozen=True)
class Outcome:
    code: int
    version: int | None = None  # the version served, for a 200
    quiet: bool = False  # no UFS call needed


Branch = tuple[Outcome, FileState]
Check = Callable[[int, httpx.Response, FileState], bool]  # is a 200 answer right for a version


def resolve(state: FileState, sync: int, version: int | None, t0: float, t1: float
            ) -> list[tuple[Cached, FileState, bool]]:  # fmt: skip
    """The statuses the worker may use: (status, state after, whether the UFS was asked)."""
    synced = dataclasses.replace(
        state,
        cached=MISSING if state.ufs is None else state.ufs,
        synced=(t0, t1),
        pages=state.pages if state.ufs == state.cached else frozenset(),
    )
    fresh = (synced.cached, synced, True)
    if version is not None:
        return [(state.cached, state, False)] if state.cached == version else [fresh]
    if state.cached == UNKNOWN or sync == 0:
        return [fresh]
    if sync == -1:
        return [(state.cached, state, False)]
    lo, hi = state.synced
    options = []
    if t0 - hi <= N_MS / 1000 + SLACK_S:
        options.append((state.cached, state, False))
    if t1 - lo > N_MS / 1000 - SLACK_S:
        options.append(fresh)
    return options


def status_branches(state: FileState, sync: int, version: int | None, t0: float, t1: float
                    ) -> list[Branch]:  # fmt: skip
    branches = []
    for status, after, asked in resolve(state, sync, version, t0, t1):
        if status == MISSING:
            codes = (404,) if version is None else (404, 412)
            branches += [(Outcome(code, None, not asked), after) for code in codes]
        elif version is not None and status != version:
            branches.append((Outcome(412, None, not asked), after))
        else:
            assert isinstance(status, int)
            branches.append((Outcome(200, status, not asked), after))
    return branches


def read_branches(state: FileState, sync: int, version: int | None, t0: float, t1: float
                  ) -> list[Branch]:  # fmt: skip
    branches = []
    for outcome, after in status_branches(state, sync, version, t0, t1):
        served = outcome.version
        if served is None or served in after.pages:
            branches.append((outcome, after))
        elif after.ufs == served:
            pages = after.pages | {served}
            branches.append((Outcome(200, served), dataclasses.replace(after, pages=pages)))
        else:
            branches += changed_mid_read(after, version, t0, t1)
    return branches


def changed_mid_read(state: FileState, version: int | None, t0: float, t1: float) -> list[Branch]:
    """The UFS no longer has the version being read: the new status is recorded (old pages
    evicted); without ``version=`` the new version is served."""
    now: Cached = MISSING if state.ufs is None else state.ufs
    after = dataclasses.replace(state, cached=now, synced=(t0, t1), pages=frozenset())
    if version is not None:
        codes = (404, 412) if now == MISSING else (412,)
        return [(Outcome(code), after) for code in codes]
    if now == MISSING:
        return [(Outcome(404), after)]
    assert isinstance(now, int)
    return [(Outcome(200, now), dataclasses.replace(after, pages=frozenset({now})))]


class Walk:
    """The random walk: the real worker and the model side by side."""

    def __init__(self, scene: Scene, worker: Worker, seed: int, answers: Counter[str]) -> None:
        self.scene, self.worker, self.rng = scene, worker, random.Random(seed)
        self.uris = [f"{scene.prefix}/s{seed}/f{n}.bin" for n in range(FILES)]
        self.contents: list[bytes] = []
        self.index: dict[str, int] = {}  # etag -> content index
        self.model: dict[str, FileState] = {}
        self.seen: dict[str, int] = {}  # the newest version each file was seen at
        self.steps = 0
        self.answers = answers  # what the checked answers were, for the figures
        for uri in self.uris:
            self.model[uri] = FileState(self.new_content(uri), UNKNOWN, (0.0, 0.0), frozenset())
            self.scene.put(uri, self.contents[-1])

    def new_content(self, uri: str) -> int:
        size = self.rng.choice([1, 100, 4096, 65536, self.rng.randrange(1, 65536)])
        data = content(f"{uri}-{len(self.contents)}", size)
        self.contents.append(data)
        self.index[hashlib.md5(data).hexdigest()] = len(self.contents) - 1
        return len(self.contents) - 1

    def step(self) -> None:
        self.steps += 1
        uri = self.rng.choice(self.uris)
        action = self.rng.choices(
            [self.outside_write, self.outside_delete, self.worker_write, self.invalidate,
             self.wait, self.status, self.read],
            weights=[3, 1, 2, 1, 1, 6, 10],
        )[0]  # fmt: skip
        action(uri)

    # -- changes -------------------------------------------------------------------------------

    def outside_write(self, uri: str) -> None:
        index = self.new_content(uri)
        self.scene.put(uri, self.contents[index])
        self.model[uri] = dataclasses.replace(self.model[uri], ufs=index)

    def outside_delete(self, uri: str) -> None:
        if self.model[uri].ufs is not None:
            self.scene.outside.rm_file(uri.removeprefix("s3://"))
            self.model[uri] = dataclasses.replace(self.model[uri], ufs=None)

    def worker_write(self, uri: str) -> None:
        index = self.new_content(uri)
        t0 = time.time()
        answer = self.worker.http.put(
            self.worker.url + "/v1/write", params={"path": uri}, content=self.contents[index]
        )
        t1 = time.time()
        assert answer.status_code in (200, 201), answer.text
        assert self.index[answer.json()["version"]] == index
        self.model[uri] = FileState(index, index, (t0, t1), frozenset())
        self.saw(uri, index)

    def invalidate(self, uri: str) -> None:
        answer = self.worker.http.post(self.worker.url + "/v1/invalidate", params={"path": uri})
        assert answer.status_code == 200, answer.text
        self.model[uri] = dataclasses.replace(self.model[uri], cached=UNKNOWN, pages=frozenset())

    def wait(self, uri: str) -> None:
        time.sleep(N_MS / 1000 + 2 * SLACK_S)

    # -- observations --------------------------------------------------------------------------

    def options(self, uri: str) -> tuple[int, int | None, dict[str, str]]:
        sync = self.rng.choice([0, N_MS, -1])
        version = None
        params = {"path": uri, "sync_interval": str(sync)}
        if self.rng.random() < 0.25 and self.seen.get(uri) is not None:
            version = self.rng.choice([self.seen[uri], self.rng.randrange(len(self.contents))])
            params["version"] = hashlib.md5(self.contents[version]).hexdigest()
        return sync, version, params

    def status(self, uri: str) -> None:
        sync, version, params = self.options(uri)
        before, t0 = len(self.scene.requests(uri)), time.time()
        answer = self.worker.get("/v1/status", **params)
        t1 = time.time()
        branches = status_branches(self.model[uri], sync, version, t0, t1)
        self.settle(uri, answer, branches, params, before, self.right_status)

    def read(self, uri: str) -> None:
        sync, version, params = self.options(uri)
        length = self.rng.choice([None, self.rng.randrange(1, 70000)])
        if length is not None:
            params["length"] = str(length)
        before, t0 = len(self.scene.requests(uri)), time.time()
        answer = self.worker.get("/v1/read", **params)
        t1 = time.time()
        branches = read_branches(self.model[uri], sync, version, t0, t1)

        def right_bytes(served: int, answer: httpx.Response, after: FileState) -> bool:
            return answer.content == self.contents[served][:length]

        self.settle(uri, answer, branches, params, before, right_bytes)

    def right_status(self, served: int, answer: httpx.Response, after: FileState) -> bool:
        """The status describes the version, and counts its page as cached iff the model has
        it (a page is only ever served for the version the metadata names)."""
        body = answer.json()
        cached = len(self.contents[served]) if served in after.pages else 0
        return body["size"] == len(self.contents[served]) and body["cached_bytes"] == cached

    def settle(self, uri: str, answer: httpx.Response, branches: list[Branch],
               params: dict[str, str], before: int, right: Check) -> None:  # fmt: skip
        """Check ``answer`` against the model's branches and move the model along the one
        taken."""
        version = None
        if answer.status_code == 200:
            etag = answer.headers.get("X-Dora-Version") or answer.json()["version"]
            version = self.index.get(etag)
        got = (answer.status_code, version)
        taken = [(o, s) for o, s in branches if (o.code, o.version) == got]
        where = f"step {self.steps}: {params} on {self.model[uri]}: got {answer.status_code} "
        where += f"{version} {answer.text[:100]!r}; the model allows {[o for o, _ in branches]}"
        assert taken, where
        after = merge([s for _, s in taken])
        if version is not None:
            assert right(version, answer, after), f"{where}: wrong content"
            assert version >= self.seen.get(uri, -1), f"{where}: older than seen before"
            self.saw(uri, version)
        if all(o.quiet for o, _ in taken):
            assert len(self.scene.requests(uri)) == before, f"{where}: asked the UFS"
            self.answers["answered without a UFS call (checked at the proxy)"] += 1
        self.answers[f"answered {answer.status_code}"] += 1
        self.model[uri] = after

    def saw(self, uri: str, version: int) -> None:
        self.seen[uri] = max(version, self.seen.get(uri, -1))


def merge(states: list[FileState]) -> FileState:
    """Branches with the same answer may differ only in when the status was loaded."""
    first = states[0]
    for other in states[1:]:
        assert dataclasses.replace(other, synced=first.synced) == first, states
    return dataclasses.replace(
        first, synced=(min(s.synced[0] for s in states), max(s.synced[1] for s in states))
    )


def test_reads_follow_the_freshness_model_with_an_outside_writer(
    scene: Scene, soak: bool, figure: RecordFigure
) -> None:
    worker = scene.worker("dora.worker.ufs.negative.cache.ttl=1h")
    seeds, steps = (range(5), 2000) if soak else (range(1), 200)
    answers: Counter[str] = Counter()
    try:
        for seed in seeds:
            walk = Walk(scene, worker, seed, answers)
            for _ in range(steps):
                walk.step()
    finally:
        for what, count in sorted(answers.items()):
            figure(what, count, "")
