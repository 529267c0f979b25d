"""Where the CPU of a streamed ``fs.open(path).read(8 MiB)`` of a warm local file goes (issue 27):
CPU time per 8 MiB of a raw read of the file, then of the client's steps added one at a time —
the page files copied into the result (``preadv``), plus one xxh3 per page, plus the checks of
the 16 KiB blocks as the page files store them, the whole client in one thread — and of the
client with its defaults (2 MiB parts filled in parallel: the whole process's CPU time).

Run with ``.venv/bin/python -m bench.experiments.stream_bench`` (``--size-mb``, ``--rounds``). One
real
``dora worker start`` over a local directory; every step reads the file's 8 MiB spans in turn,
the steps interleaved round by round; medians (min-max) of the rounds. CPU time, not wall
time: on a shared machine the wall time of a thread measures the scheduler as much as the code.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import xxhash

from bench.warm_bench import local_worker
from pagestore.shortcircuit import PageFile, PageLocations
from worker.client.filesystem import DoraFileSystem
from worker.client.outbytes import OutBytes

MB = 1 << 20
CHUNK = 8 << 20

Step = Callable[[int], object]


def page_steps(locations: PageLocations, pages: list[PageFile], fds: list[int]) -> dict[str, Step]:
    """Reads of span ``k`` (8 MiB) from the page files (``fds`` open on them, in page order),
    with more of the client's work each."""
    size = locations.page_size
    per = CHUNK // size

    def copy(k: int, hashed: bool = False) -> bytes:
        out = OutBytes(CHUNK)
        for i, (fd, page) in enumerate(
            zip(fds[k * per : (k + 1) * per], pages[k * per : (k + 1) * per], strict=True)
        ):
            part = out.view[i * size : (i + 1) * size]
            os.preadv(fd, [part], page.page.offset + locations.header_size)
            if hashed:
                xxhash.xxh3_64_intdigest(part)
        return out.take()

    def checked(k: int) -> bytes:
        out = OutBytes(CHUNK)
        for i, page in enumerate(pages[k * per : (k + 1) * per]):
            page.read_into(0, out.view[i * size : (i + 1) * size])
        return out.take()

    return {
        "page files copied (preadv)": copy,
        "+ one xxh3 per page": lambda k: copy(k, hashed=True),
        "+ 16 KiB block checks (read_into)": checked,
    }


def client_steps(fs: DoraFileSystem, uri: str) -> dict[str, Step]:
    """``read(8 MiB)`` of span ``k`` through an open file, in one thread and with the defaults."""
    reader = fs.reader
    default_part = reader.fill_part
    opened = fs.open(uri, "rb")

    def read(k: int, part: int) -> bytes:
        reader.fill_part = part
        opened.seek(k * CHUNK)
        data: bytes = opened.read(CHUNK)
        return data

    return {
        "client read(8 MiB), one thread": lambda k: read(k, CHUNK),
        "client read(8 MiB), defaults": lambda k: read(k, default_part),
    }


def measure(steps: dict[str, Step], spans: int, rounds: int) -> dict[str, list[float]]:
    """CPU µs per 8 MiB of each step, per round: the thread's CPU time, the process's for the
    defaults (their parts run on the read threads)."""
    times: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(rounds):
        for name, step in steps.items():
            clock = time.process_time if name.endswith("defaults") else time.thread_time
            started = clock()
            for k in range(spans):
                step(k)
            times[name].append((clock() - started) / spans * 1e6)
    return times


def run(root: Path, size: int, rounds: int) -> dict[str, list[float]]:
    local, worker = local_worker(root, size)
    try:
        uri = f"file://{local}"
        fs = DoraFileSystem(workers=[worker.address], skip_instance_cache=True)
        assert fs.cat_file(uri) == local.read_bytes()  # the worker keeps every page
        version = fs.info(uri)["version"]
        answer = fs._run(fs.remote.locate(uri, version, 0, size))
        locations = PageLocations.from_dict(answer)
        ordered = sorted(locations.pages, key=lambda p: p.index)
        pages = [PageFile(locations, page) for page in ordered]
        fds = [os.open(page.path, os.O_RDONLY) for page in ordered]
        raw = os.open(local, os.O_RDONLY)
        try:
            steps: dict[str, Step] = {
                "raw os.pread(8 MiB)": lambda k: os.pread(raw, CHUNK, k * CHUNK)
            }
            steps |= page_steps(locations, pages, fds)
            steps |= client_steps(fs, uri)
            return measure(steps, size // CHUNK, rounds)
        finally:
            for fd in [raw, *fds]:
                os.close(fd)
            for page in pages:
                page.close()
    finally:
        worker.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=40)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="stream-bench-"))
    try:
        times = run(root, args.size_mb * MB, args.rounds)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    raw = statistics.median(times["raw os.pread(8 MiB)"])
    for name, values in times.items():
        mid = statistics.median(values)
        print(
            f"{name:36s} {mid:7.0f} µs CPU per 8 MiB ({min(values):.0f}-{max(values):.0f})"
            f"  {raw / mid:.2f}x raw"
        )


if __name__ == "__main__":
    main()
