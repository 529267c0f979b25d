"""Read workloads on objects of random bytes: a whole object read sequentially into memory
(MiB/s), and random positioned reads through a file held open (p50/p99 per read and MiB/s).

Within a repetition a cached contender runs cold (caches dropped first) and then warm (right
after, so the cold pass has filled it); the random reads use the same seeded offsets for every
contender. The raw local read of the same bytes is the machine's limit.
"""

from __future__ import annotations

import os
import random
import time
from functools import partial
from pathlib import Path

from bench.side.contenders import for_op
from bench.side.core import MB, Bench, Metric, drive, sample
from bench.side.handles import Handle
from bench.side.results import percentile

THROUGHPUT = Metric("MiB/s", "MiB/s", "higher")
P50 = Metric("p50", "ms", "lower")
P99 = Metric("p99", "ms", "lower")
WRITE_CHUNK = 8 * MB


def seq_key(size_mb: int) -> str:
    return f"seq/object-{size_mb}mb.bin"


def prepare(bench: Bench) -> list[str]:
    """Upload one object of random bytes per size; the keys, smallest first."""
    assert bench.scene is not None
    keys = []
    for size_mb in sorted(bench.settings.seq_mb):
        key = seq_key(size_mb)
        local = Path(bench.scene.local) / key
        local.parent.mkdir(parents=True, exist_ok=True)
        with local.open("wb") as out:
            for _ in range(size_mb * MB // WRITE_CHUNK):
                out.write(os.urandom(WRITE_CHUNK))
            out.write(os.urandom(size_mb * MB % WRITE_CHUNK))
        bench.scene.upload_file(key, local)
        keys.append(key)
    return keys


def run_seq(bench: Bench, latency_ms: int, keys: list[str]) -> None:
    for key, size_mb in zip(keys, sorted(bench.settings.seq_mb), strict=True):
        size = size_mb * MB

        def measure(
            handle: Handle, state: str, key: str = key, size: int = size
        ) -> dict[str, float]:
            if state == "cold":
                handle.drop(key)
            started = time.perf_counter()
            got = handle.read_all(key)
            seconds = time.perf_counter() - started
            if got != size:
                raise AssertionError(f"read {got} bytes of {key}, expected {size}")
            return {THROUGHPUT.name: size / seconds / MB}

        drive(
            bench,
            "seq-read",
            latency_ms,
            for_op("read"),
            [THROUGHPUT],
            measure,
            {"size_mb": size_mb},
        )


def run_random(bench: Bench, latency_ms: int, keys: list[str]) -> None:
    """Random reads on the smallest sequential object."""
    key, size_mb = keys[0], min(bench.settings.seq_mb)
    length = bench.settings.random_kb << 10
    rng = random.Random(17)
    offsets = [rng.randrange(0, size_mb * MB - length) for _ in range(bench.settings.random_reads)]

    def measure(handle: Handle, state: str) -> dict[str, float]:
        if state == "cold":
            handle.drop(key)
        reader = handle.open_random(key)
        try:

            def one(offset: int) -> None:
                if reader.read(offset, length) != length:
                    raise AssertionError(f"a {length}-byte read at {offset} of {key} came short")

            latencies, spent = sample(bench.settings, [partial(one, o) for o in offsets])
        finally:
            reader.close()
        return {
            P50.name: percentile(latencies, 50) * 1e3,
            P99.name: percentile(latencies, 99) * 1e3,
            THROUGHPUT.name: len(latencies) * length / spent / MB,
        }

    drive(
        bench,
        "random-read",
        latency_ms,
        for_op("random"),
        [P50, P99, THROUGHPUT],
        measure,
        {"size_mb": size_mb, "read_kb": bench.settings.random_kb},
    )
