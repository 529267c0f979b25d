"""Metadata workloads: ``info`` on every file of the metadata dataset and ``ls`` of one of its
directories, p50/p99 latency and calls/s, for every contender cold and warm.

Warm means what a user's session has done before: each directory listed and each file looked
at once. Cold means the contender's caches were emptied first (for dora: invalidated at the
worker, so each status goes to the object store through the proxy).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import partial

from bench.side.contenders import for_op
from bench.side.core import Bench, Metric, drive, sample
from bench.side.handles import Handle
from bench.side.results import percentile

PREFIX = "meta"
LS_CALLS = 200
# A cold listing costs a drop and a full listing from the object store: fewer of them.
LS_COLD_CALLS = 20
P50 = Metric("p50", "ms", "lower")
P99 = Metric("p99", "ms", "lower")
RATE = Metric("calls/s", "calls/s", "higher")


@dataclass(frozen=True)
class MetaData:
    """The keys of the metadata dataset, grouped by directory."""

    dirs: list[str]
    files: list[str]


def prepare(bench: Bench) -> MetaData:
    """Upload ``meta_dirs`` directories of ``meta_files_per_dir`` small objects."""
    assert bench.scene is not None
    settings = bench.settings
    dirs = [f"{PREFIX}/d{d}" for d in range(settings.meta_dirs)]
    files = [f"{d}/f{n:05d}" for d in dirs for n in range(settings.meta_files_per_dir)]
    bench.scene.upload_many({key: key.encode().ljust(64, b".") for key in files})
    return MetaData(dirs, files)


def _warm(handle: Handle, data: MetaData) -> None:
    for directory in data.dirs:
        handle.ls(directory)
    for key in data.files:
        handle.info(key)


def _summary(latencies: list[float], spent: float) -> dict[str, float]:
    return {
        P50.name: percentile(latencies, 50) * 1e3,
        P99.name: percentile(latencies, 99) * 1e3,
        RATE.name: len(latencies) / spent,
    }


def run_info(bench: Bench, latency_ms: int, data: MetaData) -> None:
    order = list(data.files)
    random.Random(11).shuffle(order)

    def measure(handle: Handle, state: str) -> dict[str, float]:
        if state == "cold":
            handle.drop(PREFIX)
        elif state == "warm":
            _warm(handle, data)
        latencies, spent = sample(bench.settings, [partial(handle.info, key) for key in order])
        return _summary(latencies, spent)

    drive(
        bench, "info", latency_ms, for_op("info"), [P50, P99, RATE], measure, {"files": len(order)}
    )


def run_ls(bench: Bench, latency_ms: int, data: MetaData) -> None:
    directory, expected = data.dirs[0], bench.settings.meta_files_per_dir

    def listing(handle: Handle) -> None:
        got = handle.ls(directory)
        if got != expected:
            raise AssertionError(f"ls {directory}: {got} entries, expected {expected}")

    def measure(handle: Handle, state: str) -> dict[str, float]:
        if state == "cold":
            calls = [partial(listing, handle)] * LS_COLD_CALLS
            return _summary(*sample(bench.settings, calls, partial(handle.drop, PREFIX)))
        calls = [partial(listing, handle)] * LS_CALLS
        if state == "warm":
            listing(handle)
        return _summary(*sample(bench.settings, calls))

    drive(bench, "ls", latency_ms, for_op("ls"), [P50, P99, RATE], measure, {"entries": expected})
