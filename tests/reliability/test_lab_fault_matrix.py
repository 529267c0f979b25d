"""The many-host lab's fault matrix (issue 24; ``make soak`` runs it long): round after round,
each fault a cluster meets on a normal day — a worker host's link down, etcd unreachable, S3
unreachable, a worker cut off from etcd alone — while files are read through the ring and
written through workers from a live host. Every byte any worker serves is one of the versions
written to that file (never a mix, never a third thing), and after each heal every worker, asked
straight at sync interval -1, serves the bytes S3 holds. The short run is one round; the soak
ten, each fault on a host picked at random.

The single faults, each with its exact expectations, are
``tests/integration/lab/test_lab_faults.py``.
"""

from __future__ import annotations

import hashlib
import random
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from tests.integration.lab.lab_support import (
    lab_fixture,
    online,
    put_files,
    read_op,
    ufs_digest,
    wait_for,
)
from tests.reliability.support import RecordFigure
from worker.devlab.lab.lab import Lab

pytestmark = pytest.mark.reliability
FILES = 12
WORKER_HOSTS = ("w1", "w2", "w3")


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    yield from lab_fixture(tmp_path_factory)


class Matrix:
    """The files, every version each has had (SHA-256), and the checks of one scenario."""

    def __init__(self, lab: Lab, rng: random.Random) -> None:
        self.lab, self.rng = lab, rng
        self.versions = {uri: {sha} for uri, sha in put_files(lab, "matrix", FILES).items()}
        self.reads = 0
        self.writes = 0

    def traffic(self, host: str, uris: list[str]) -> None:
        """From ``host``: read ``uris`` through the ring, then overwrite one of them through a
        worker; every answer served must be a version the file has had."""
        for uri, answer in zip(uris, self.lab.probe(host, *map(read_op, uris)), strict=True):
            if "sha256" in answer:  # a read that failed over to nothing is no wrong byte
                assert answer["sha256"] in self.versions[uri], (uri, answer)
                self.reads += 1
        uri = self.rng.choice(uris)
        text = f"round write {self.writes} to {uri}"
        [written] = self.lab.probe(host, {"op": "write", "uri": uri, "text": text})
        if "error" not in written:
            self.versions[uri].add(hashlib.sha256(text.encode()).hexdigest())
            self.writes += 1

    def converged(self) -> None:
        """Wait until every worker, asked straight at -1, serves what S3 holds for every file
        (the feed, caught up after a heal, invalidated what changed)."""
        now = {uri: ufs_digest(self.lab, uri) for uri in self.versions}
        for uri, sha in now.items():
            assert sha in self.versions[uri], uri

        asks = [(uri, worker) for worker in self.lab.addresses for uri in now]

        def everyone_current() -> bool:
            answers = self.lab.probe("w1", *(read_op(uri, worker) for uri, worker in asks))
            for (uri, _), answer in zip(asks, answers, strict=True):
                if "sha256" in answer:
                    assert answer["sha256"] in self.versions[uri], (uri, answer)
            served = zip(asks, answers, strict=True)
            return all(answer.get("sha256") == now[uri] for (uri, _), answer in served)

        wait_for(everyone_current)


@contextmanager
def fault(lab: Lab, kind: str, host: str) -> Iterator[str]:
    """Break ``kind`` (on worker ``host`` where it names one) and heal it on exit; yields the
    worker host the traffic runs from meanwhile."""
    others = [h for h in WORKER_HOSTS if h != host]
    if kind == "link":
        lab.network.link(host, up=False)
        heal: Callable[[], None] = lambda: lab.network.link(host, up=True)  # noqa: E731
    elif kind == "partition":
        lab.network.partition(host, "etcd", cut=True)
        heal = lambda: lab.network.partition(host, "etcd", cut=False)  # noqa: E731
    else:  # "etcd" or "s3": the whole service unreachable from every host
        lab.network.link(kind, up=False)
        heal = lambda: lab.network.link(kind, up=True)  # noqa: E731
    try:
        yield others[0]
    finally:
        heal()
    if kind in ("link", "partition"):
        wait_for(lambda: lab.worker(host).address in online(lab, others[0]))


def test_rounds_of_faults_serve_no_wrong_byte_and_converge_after_each_heal(
    lab: Lab, soak: bool, figure: RecordFigure
) -> None:
    rng = random.Random(24)
    matrix = Matrix(lab, rng)
    uris = sorted(matrix.versions)
    rounds = 10 if soak else 1
    started = time.monotonic()
    for _ in range(rounds):
        for kind in ("link", "etcd", "s3", "partition"):
            host = rng.choice(("w2", "w3"))  # w1 runs the checks' probes
            with fault(lab, kind, host) as live:
                if kind == "link":
                    gone = lab.worker(host).address
                    wait_for(lambda: gone not in online(lab, live))  # noqa: B023
                matrix.traffic(live, rng.sample(uris, 6))
            matrix.converged()
    figure("fault rounds", rounds, "")
    figure("reads checked", matrix.reads, "")
    figure("writes during faults", matrix.writes, "")
    figure("matrix time", time.monotonic() - started, "s")
    for worker in lab.workers:
        assert "Traceback" not in worker.log.read_text()
