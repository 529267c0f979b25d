"""Workloads of many clients against one worker.

``status-rate``: warm ``info`` calls per second with 1, 8, 32 clients, as threads of one
process sharing one client, and as processes with a client each. Only dora contenders: the
peers have no server to share.

``shared``: ``shared_processes`` processes each read the whole shared dataset, all starting
cold at once. The proxy counts what reached the object store: dora's worker fetches each page
once for the host; fsspec's per-process caches fetch once per process.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from threading import Barrier

from bench.side.clients import ClientGroup, count_infos
from bench.side.contenders import Contender, for_op
from bench.side.core import MB, Bench, Metric
from bench.side.handles import Handle, HttpHandle

CALLS = Metric("calls/s", "calls/s", "higher")
UFS_BYTES = Metric("UFS bytes", "x dataset", "lower")
UFS_REQUESTS = Metric("UFS requests", "requests", "lower")
WALL = Metric("wall", "s", "lower")
SHARED = "shared"


def _threads_rate(bench: Bench, contender: Contender, clients: int, keys: list[str]) -> list[float]:
    assert bench.scene is not None
    handle = contender.make(bench.scene.info, "rate")
    seconds = bench.settings.rate_seconds
    try:
        handle.info(keys[0])
        reps = []
        for _ in range(bench.settings.reps):
            start = Barrier(clients)
            with ThreadPoolExecutor(clients) as pool:
                counts = pool.map(
                    _thread_client,
                    [(handle, start, keys[n::clients] or keys, seconds) for n in range(clients)],
                )
                reps.append(sum(counts) / seconds)
        return reps
    finally:
        handle.close()


def _thread_client(job: tuple[Handle, Barrier, list[str], float]) -> float:
    handle, start, keys, seconds = job
    start.wait()
    return count_infos(handle, keys, seconds)


def _process_rate(bench: Bench, contender: Contender, clients: int, keys: list[str]) -> list[float]:
    assert bench.scene is not None
    seconds = bench.settings.rate_seconds
    with ClientGroup(
        clients, contender.name, bench.scene.info, "rate", (keys, seconds), bench.settings.reps
    ) as group:
        return [sum(group.round()) / seconds for _ in range(bench.settings.reps)]


def run_rate(bench: Bench, latency_ms: int, files: list[str]) -> None:
    keys = files[: min(len(files), 1000)]
    contenders = [c for c in bench.contenders(for_op("info")) if c.kind == "dora"]
    for mode, measure in (("threads", _threads_rate), ("processes", _process_rate)):
        for clients in bench.settings.rate_clients:
            for contender in contenders:
                params = {"clients": clients, "mode": mode}
                row = contender.row("warm")
                na = contender.missing()
                reps: list[float] = []
                if na is None:
                    try:
                        with bench.profiled("status-rate", row, latency_ms):
                            reps = measure(bench, contender, clients, keys)
                    except Exception as exc:  # noqa: BLE001  # reported as the figure
                        na = f"failed: {type(exc).__name__}: {exc}"[:200]
                bench.emit(
                    "status-rate",
                    row,
                    CALLS,
                    latency_ms,
                    reps,
                    params=params,
                    na=na,
                    contender=contender,
                    state="warm",
                )


def prepare_shared(bench: Bench) -> list[str]:
    """Four objects of random bytes making ``shared_mb`` in all."""
    assert bench.scene is not None
    keys = []
    part = bench.settings.shared_mb * MB // 4
    for n in range(4):
        key = f"{SHARED}/part-{n}.bin"
        local = Path(bench.scene.local) / key
        local.parent.mkdir(parents=True, exist_ok=True)
        local.write_bytes(os.urandom(part))
        bench.scene.upload_file(key, local)
        keys.append(key)
    return keys


def run_shared(bench: Bench, latency_ms: int, keys: list[str]) -> None:
    scene = bench.scene
    assert scene is not None and scene.proxy is not None
    n = bench.settings.shared_processes
    size = bench.settings.shared_mb * MB // 4 * 4
    params = {"processes": n, "dataset_mb": bench.settings.shared_mb}
    worker = HttpHandle(scene.info)
    try:
        for contender in bench.contenders(for_op("read")):
            if contender.kind == "limit":
                continue
            row = contender.row("cold")
            values: dict[str, list[float]] = {}
            na = contender.missing()
            if na is None:
                try:
                    values = _shared_reps(bench, contender, keys, size, worker)
                except Exception as exc:  # noqa: BLE001  # reported as the figures
                    na = f"failed: {type(exc).__name__}: {exc}"[:200]
            for metric in (UFS_BYTES, UFS_REQUESTS, WALL):
                bench.emit(
                    "shared",
                    row,
                    metric,
                    latency_ms,
                    values.get(metric.name),
                    params=params,
                    na=na,
                    contender=contender,
                    state="cold",
                )
    finally:
        worker.close()


def _shared_reps(
    bench: Bench, contender: Contender, keys: list[str], size: int, worker: HttpHandle
) -> dict[str, list[float]]:
    scene = bench.scene
    assert scene is not None and scene.proxy is not None
    # Per-process caches start each round over a new, empty cache directory; dora's cache is
    # the worker's, emptied here before each round.
    drop_after = None if contender.kind == "dora" else SHARED
    values: dict[str, list[float]] = {}
    with ClientGroup(
        bench.settings.shared_processes,
        contender.name,
        scene.info,
        "shared",
        (keys,),
        bench.settings.reps,
        drop_after,
    ) as group:
        for _ in range(bench.settings.reps):
            worker.drop(SHARED)
            scene.proxy.reset_counts()
            walls = group.round()
            stats = scene.proxy.stats()
            values.setdefault(UFS_BYTES.name, []).append(stats.bytes_down / size)
            values.setdefault(UFS_REQUESTS.name, []).append(float(stats.requests))
            values.setdefault(WALL.name, []).append(max(walls))
    return values
