"""Figures of the many-host lab (issue 24), in the lab's network namespaces (root only):

- a warm read of one file from a client on host A: from A's own worker, from the owner on host
  B, and straight from S3 (median of ``--repeat`` reads each, in one client process on A);
- a worker host's link dropped: the first read of its file by a fresh client while the ring
  still lists the host (its lease runs), by a client that had used it (a long-lived client),
  then, once etcd no longer lists the host, by a fresh client and the steady state; the time
  from the link drop until etcd's membership no longer lists it (lease expiry, timed alongside
  the reads); with the link back, the time until it is listed again (rejoin) and until it has
  applied the feed's newest revision (catch-up).

With ``--tls`` the lab runs over TLS (:mod:`worker.devlab.lab.tls`: HTTPS workers requiring client
certificates, etcd over TLS, a token), its certificates from the tests' throwaway CA.

    .venv/bin/python -m bench.lab_bench [--repeat 5] [--size-mb 4] [--rounds 3] [--tls]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from tests.worker.tls.certs import CA
from worker.client.http import Call, WorkerClient
from worker.cluster.etcd import Etcd
from worker.cluster.status import cluster_status
from worker.devlab.lab.lab import BUCKET, Lab, LabWorker, guard
from worker.devlab.lab.netns import unavailable_reason


def _read(client: WorkerClient, uri: str) -> tuple[float, str]:
    started = time.monotonic()
    answer = client.send(Call("GET", "/v1/read", uri, "read", {"path": uri}))
    return time.monotonic() - started, answer.worker


def _until(condition: Callable[[], bool], timeout: float = 120.0) -> float:
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > timeout:
            raise RuntimeError("condition not met in time")
        time.sleep(0.05)
    return time.monotonic() - started


def reads(lab: Lab, size_mb: int, repeat: int) -> dict[str, float]:
    """Median seconds of a warm read from w1: own worker, the owner on another host, S3."""
    assert lab.s3 is not None
    fs = lab.s3.client()
    data = b"x" * (size_mb << 20)
    uris = [f"s3://{BUCKET}/bench/read-{i}" for i in range(12)]
    for uri in uris:
        fs.pipe(uri.removeprefix("s3://"), data)
    [owners] = lab.probe("w1", {"op": "owners", "uris": uris})
    placed = owners["owners"]  # type: ignore[index]
    own = next(u for u in uris if placed[u] == lab.worker("w1").address)
    other = next(u for u in uris if placed[u] != lab.worker("w1").address)

    def get(uri: str) -> dict[str, object]:
        query = {"path": uri, "sync_interval": "-1"}
        return {"op": "get", "worker": placed[uri], "path": "/v1/read", "params": query}

    s3 = {"op": "s3", "uri": own}
    answers = lab.probe("w1", get(own), get(other), *[get(own), get(other), s3] * repeat)
    times = [float(a["seconds"]) for a in answers[2:]]  # type: ignore[arg-type]
    return {
        "same host": statistics.median(times[0::3]),
        "cross host": statistics.median(times[1::3]),
        "direct S3": statistics.median(times[2::3]),
    }


def _fresh_read(lab: Lab, uri: str, lost: LabWorker, listed: bool = True) -> float:
    """A new client's first read of ``uri`` (owned by ``lost``, whose link is down), while the
    ring it builds from etcd still lists ``lost`` (one connect timeout to it, then the next
    worker) or once it no longer does (no attempt to it at all); RuntimeError otherwise."""
    client = lab.client()
    if (lost.address in client.ring.workers) != listed:
        raise RuntimeError(f"the fresh client's ring {'no longer' if listed else 'still'} "
                           f"lists {lost.address}")  # fmt: skip
    seconds = _read(client, uri)[0]
    tried = client.counters.snapshot().unreachable.get(lost.address, 0)
    if tried != int(listed):
        raise RuntimeError(f"the fresh client tried {lost.address} {tried} times")
    return seconds


def failover(lab: Lab) -> dict[str, float]:
    """One round of link down / up on w3, timed as the module docstring says."""
    assert lab.s3 is not None and lab.etcd is not None
    lost = lab.worker("w3")
    etcd = Etcd([lab.etcd.endpoint], 2.0, tls=None if lab.tls is None else lab.tls.trusted)
    uris = [f"s3://{BUCKET}/bench/fail-{i}" for i in range(12)]
    for uri in uris:
        lab.s3.client().pipe(uri.removeprefix("s3://"), b"y" * 65536)
    used = lab.client()
    uri = next(u for u in uris if used.ring.owner(u) == lost.address)
    _read(used, uri)

    def listed() -> dict[str, tuple[bool, int | None]]:
        status = cluster_status(etcd, "DefaultAlluxioCluster")
        return {m.info.name: (m.online, m.lag) for m in status.members}

    figures: dict[str, float] = {}

    def expiry() -> None:
        figures["lease expiry to ring change"] = _until(lambda: not listed()[lost.address][0])

    # Timed from the link drop, alongside the reads (which may take longer than the lease).
    watcher = threading.Thread(target=expiry)
    lab.network.link("w3", up=False)
    try:
        watcher.start()
        # At once, while the lease runs (a third of it at least): the ring still lists w3.
        figures["first read, fresh client, ring not yet changed"] = _fresh_read(lab, uri, lost)
        figures["first read, long-lived client"] = _read(used, uri)[0]
        watcher.join()
        figures["first read, fresh client, ring changed"] = _fresh_read(lab, uri, lost, False)
        figures["steady read, ring changed"] = _read(used, uri)[0]
    finally:
        lab.network.link("w3", up=True)
    figures["rejoin"] = _until(lambda: listed()[lost.address][0])
    figures["rejoin + catch-up"] = figures["rejoin"] + _until(
        lambda: listed()[lost.address][1] == 0
    )
    etcd.close()
    return figures


def report(lab: Lab, size_mb: int, repeat: int, rounds: int) -> None:
    """Measure and print every figure (the module docstring)."""
    for what, seconds in reads(lab, size_mb, repeat).items():
        print(f"read {size_mb} MB warm from w1, {what}: {seconds * 1000:.1f} ms")
    measured = [failover(lab) for _ in range(rounds)]
    for what in measured[0]:
        values = sorted(r[what] for r in measured)
        print(f"{what}: median {statistics.median(values):.2f} s "
              f"({values[0]:.2f}-{values[-1]:.2f}, {len(values)} rounds)")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--size-mb", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tls", action="store_true", help="the lab over TLS")
    args = parser.parse_args()
    reason = unavailable_reason()
    if reason is not None:
        print(f"lab_bench skipped: {reason}")
        return 0
    with guard(), tempfile.TemporaryDirectory() as root:
        issuer = CA(Path(root) / "ca") if args.tls else None
        with Lab(Path(root), tls=issuer) as lab:
            report(lab, args.size_mb, args.repeat, args.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
