"""The same-host fast path against a real worker process (``dora worker start`` over a local
directory UFS), warm: short-circuit reads (:mod:`worker.client.shortcircuit`) against the REST
read they replace and a plain local file read, and near-cache ``info``/``ls`` answers
(:mod:`worker.client.nearcache`) against the REST calls.

Run with ``.venv/bin/python -m bench.experiments.fastpath_bench`` (``--size-mb``, ``--reads``,
``--repeats``). Each figure is the median of the repetitions with their min-max. The modules
are measured on their own, without the fsspec client around them.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from bench.side.services import WorkerProcess
from worker.client.nearcache import NearCache
from worker.client.shortcircuit import ShortCircuitReader
from worker.common.generations import GenerationView

BLOCK = 64 * 1024
SEQ_CHUNK = 4 << 20


class Rest:
    """The calls a client makes, over one keep-alive connection."""

    def __init__(self, address: str) -> None:
        self.http = httpx.Client(base_url=f"http://{address}", timeout=60)

    def json(self, route: str, **params: Any) -> Any:
        answer = self.http.get(route, params=params)
        answer.raise_for_status()
        return answer.json()

    def locate(self, path: str, version: str, offset: int, length: int) -> Any:
        return self.json("/v1/locate", path=path, version=version, offset=offset, length=length)

    def fetch(self, path: str, version: str, offset: int, buffer: memoryview) -> None:
        params = {"path": path, "version": version, "offset": offset, "length": len(buffer)}
        answer = self.http.get("/v1/read", params=params)
        answer.raise_for_status()
        buffer[:] = answer.content


def p50_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def timed(fn: Callable[[int], object], n: int) -> list[float]:
    samples = []
    for i in range(n):
        started = time.perf_counter()
        fn(i)
        samples.append(time.perf_counter() - started)
    return samples


def random_reads(
    rest: Rest, sc: ShortCircuitReader, uri: str, version: str, size: int, n: int
) -> dict[str, float]:
    offsets = [random.randrange(0, size - BLOCK) for _ in range(n)]
    buffer = bytearray(BLOCK)

    def over_http(i: int) -> None:
        rest.fetch(uri, version, offsets[i], memoryview(buffer))

    def short_circuit(i: int) -> None:
        sc.read_into(uri, version, offsets[i], buffer)

    return {
        "random 64KB p50 ms, REST read": p50_ms(timed(over_http, n)),
        "random 64KB p50 ms, short-circuit": p50_ms(timed(short_circuit, n)),
    }


def sequential(
    rest: Rest, sc: ShortCircuitReader, uri: str, version: str, local: Path, size: int
) -> dict[str, float]:
    buffer = bytearray(size)
    view = memoryview(buffer)

    def whole(read: Callable[[int, memoryview], None]) -> float:
        started = time.perf_counter()
        for at in range(0, size, SEQ_CHUNK):
            read(at, view[at : at + SEQ_CHUNK])
        return size / (time.perf_counter() - started) / 1e9

    def local_read(at: int, part: memoryview) -> None:
        os.preadv(fd, [part], at)

    fd = os.open(local, os.O_RDONLY)
    try:
        return {
            "sequential GB/s, REST read": whole(
                lambda at, part: rest.fetch(uri, version, at, part)
            ),
            "sequential GB/s, short-circuit": whole(
                lambda at, part: sc.read_into(uri, version, at, part)
            ),
            "sequential GB/s, local file": whole(local_read),
        }
    finally:
        os.close(fd)


def metadata(rest: Rest, near: NearCache, uri: str, directory: str, n: int) -> dict[str, float]:
    """REST first, then the near-cache, each filled just before (its TTL is short)."""
    figures = {
        "info p50 ms, REST status": p50_ms(timed(lambda i: rest.json("/v1/status", path=uri), n)),
        "ls 1000 p50 ms, REST list": p50_ms(
            timed(lambda i: rest.json("/v1/list", path=directory), n // 10)
        ),
    }
    info_key, dir_key = near.key(uri), near.key(directory)
    assert info_key is not None and dir_key is not None
    stamp, asked_at = near.stamp(info_key), near.now()
    answer = rest.json("/v1/status", path=uri)
    near.put_status(info_key, stamp, asked_at, answer, answer["age_ms"])
    stamp, asked_at = near.stamp(dir_key), near.now()
    entries = rest.json("/v1/list", path=directory)["entries"]
    near.put_listing(dir_key, stamp, asked_at, [(e["uri"], e) for e in entries], None)

    def near_info(i: int) -> None:
        key = near.key(uri)
        assert key is not None and near.status(key) is not None

    def near_ls(i: int) -> None:
        key = near.key(directory)
        assert key is not None and near.listing(key) is not None

    figures["info p50 ms, near-cache"] = p50_ms(timed(near_info, n))
    figures["ls 1000 p50 ms, near-cache"] = p50_ms(timed(near_ls, n))
    return figures


def one_run(root: Path, size: int, reads: int) -> dict[str, float]:
    data = root / "data"
    (data / "dir").mkdir(parents=True)
    (data / "big.bin").write_bytes(os.urandom(size))
    for i in range(1000):
        (data / "dir" / f"f{i:04d}").write_bytes(b"x")
    worker = WorkerProcess(
        root / "work", [f"dora.worker.ufs.roots=file://{data}", "dora.worker.page.store.sizes=4GB"]
    )
    try:
        rest = Rest(worker.address)
        uri, directory = f"file://{data}/big.bin", f"file://{data}/dir"
        version = rest.json("/v1/status", path=uri)["version"]
        buffer = bytearray(size)
        rest.fetch(uri, version, 0, memoryview(buffer))  # warm the page store
        local = rest.json("/v1/local")
        sc = ShortCircuitReader(local["page_size"], rest.locate, rest.fetch)
        sc.read_into(uri, version, 0, buffer)  # warm the locations and the OS page cache
        view = GenerationView(Path(local["generations"]))
        near = NearCache(view, local["sync_interval_ms"])
        figures = random_reads(rest, sc, uri, version, size, reads)
        figures |= sequential(rest, sc, uri, version, data / "big.bin", size)
        figures |= metadata(rest, near, uri, directory, reads)
        assert sc.stats().get("http_bytes", 0) == 0, sc.stats()
        view.close()
        rest.http.close()
        return figures
    finally:
        worker.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=256)
    parser.add_argument("--reads", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    runs = []
    for _ in range(args.repeats):
        root = Path(tempfile.mkdtemp(prefix="dora-fastpath-"))
        try:
            runs.append(one_run(root, args.size_mb << 20, args.reads))
        finally:
            shutil.rmtree(root, ignore_errors=True)
    print(f"| figure (median of {args.repeats}, min-max) | value |\n|---|---|")
    for name in runs[0]:
        values = [run[name] for run in runs]
        print(f"| {name} | {statistics.median(values):.4g} ({min(values):.4g}-{max(values):.4g}) |")


if __name__ == "__main__":
    main()
