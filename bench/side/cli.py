"""``python -m bench.side``: run the side-by-side suite, print every figure, write the result
file, and (with ``--render``) the tables of ``bench/RESULTS.md`` and the plots.

    .venv/bin/python -m bench.side --quick --render        # make bench-quick
    .venv/bin/python -m bench.side --render                # the full suite, part of make bench
    .venv/bin/python -m bench.side --workload random-read --latency-ms 0 \\
        --contender "dora fsspec" --profile random-read:"dora fsspec, warm"
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shlex
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from bench.side import render, wl_growth, wl_meta, wl_procs, wl_reads
from bench.side.contenders import CONTENDERS
from bench.side.core import FULL, QUICK, Bench, settings_dict
from bench.side.profiling import ProfileSpec
from bench.side.results import RunResult, machine_facts
from bench.side.services import Scene

BENCH_DIR = Path(__file__).resolve().parent.parent
WORKLOADS = (
    "info",
    "ls",
    "status-rate",
    "seq-read",
    "random-read",
    "shared",
    "growth-status",
    "growth-pages",
)
# Run in this process on the worker's components, after the servers are stopped.
IN_PROCESS = {
    "growth-status": wl_growth.run_growth_status,
    "growth-pages": wl_growth.run_growth_pages,
}
# Warm-only workloads do not touch the object store: they run at the first latency only.
LATENCY_FREE = ("status-rate",)


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.side", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes, 0 ms only")
    parser.add_argument(
        "--workload",
        action="append",
        choices=WORKLOADS,
        help="run only these (repeatable); default: all",
    )
    parser.add_argument(
        "--contender",
        action="append",
        default=[],
        help="only contenders whose name contains this (repeatable)",
    )
    parser.add_argument(
        "--latency-ms",
        type=int,
        action="append",
        help="added object-store latency (repeatable); default 0 and 20",
    )
    parser.add_argument("--reps", type=int, help="repetitions per figure (at least 3)")
    parser.add_argument(
        "--out", type=Path, help="result file (default bench/results/<time>-<mode>.json)"
    )
    parser.add_argument("--label", default="", help="a note stored with the result")
    parser.add_argument(
        "--profile", help="WORKLOAD or WORKLOAD:ROW-SUBSTRING to record with py-spy"
    )
    parser.add_argument("--profile-target", choices=("worker", "bench"), default="worker")
    parser.add_argument(
        "--render",
        action="store_true",
        help="render bench/RESULTS.md and the plots from the result",
    )
    args = parser.parse_args(argv)
    if args.reps is not None and args.reps < 3:
        parser.error("--reps: every figure is the median of at least 3 repetitions")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    settings = QUICK if args.quick else FULL
    if args.reps:
        settings = dataclasses.replace(settings, reps=args.reps)
    if args.latency_ms:
        settings = dataclasses.replace(settings, latencies_ms=tuple(args.latency_ms))
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    out = args.out or BENCH_DIR / "results" / f"{stamp}-{settings.mode}.json"
    result = RunResult(
        mode=settings.mode,
        command=shlex.join([".venv/bin/python", "-m", "bench.side", *(argv or sys.argv[1:])]),
        settings=settings_dict(settings),
        machine=machine_facts(),
        started=datetime.now(UTC).isoformat(timespec="seconds"),
        label=args.label,
        contenders={c.name: c.missing() or "ok" for c in CONTENDERS},
    )
    profile = ProfileSpec.parse(args.profile, args.profile_target) if args.profile else None
    bench = Bench(settings, result, out.parent, args.contender, profile)
    chosen = args.workload or list(WORKLOADS)
    print(f"side-by-side benchmark, {settings.mode}: {', '.join(chosen)} -> {out}", flush=True)
    started = time.monotonic()
    try:
        _run(bench, chosen, lambda: result.save(out))
    finally:
        result.finished = datetime.now(UTC).isoformat(timespec="seconds")
        result.machine["load_after"] = list(os.getloadavg())
        result.machine["seconds"] = round(time.monotonic() - started)
        result.save(out)
        print(f"wrote {out}", flush=True)
    if args.render:
        render.render_run(out, BENCH_DIR / "RESULTS.md", BENCH_DIR / "results" / "plots")
    return 1 if result.errors else 0


def _run(bench: Bench, chosen: list[str], checkpoint: Callable[[], None]) -> None:
    scene_workloads = [w for w in chosen if w not in IN_PROCESS]
    if scene_workloads:
        with Scene(list(bench.settings.worker_defines)) as scene:
            bench.scene = scene
            _run_scene(bench, scene, scene_workloads, checkpoint)
        bench.scene = None
    for workload in chosen:
        if workload in IN_PROCESS:
            with _timed(bench, workload, None):
                IN_PROCESS[workload](bench)
            checkpoint()


@contextmanager
def _timed(bench: Bench, workload: str, latency: int | None) -> Iterator[None]:
    """Print how long a workload took; a failure is recorded in the run's errors and the run
    goes on."""
    where = workload if latency is None else f"{workload} @{latency}ms"
    print(f"=== {where}", flush=True)
    started = time.monotonic()
    try:
        yield
    except Exception as exc:  # noqa: BLE001  # one workload failing must not end the run
        message = f"{where}: {type(exc).__name__}: {exc}"
        bench.result.errors.append(message)
        print(f"FAILED {message}", flush=True)
    print(f"=== {where}: {time.monotonic() - started:.0f} s", flush=True)


def _run_scene(
    bench: Bench, scene: Scene, chosen: list[str], checkpoint: Callable[[], None]
) -> None:
    meta = wl_meta.prepare(bench) if {"info", "ls", "status-rate"} & set(chosen) else None
    seq = wl_reads.prepare(bench) if {"seq-read", "random-read"} & set(chosen) else []
    shared = wl_procs.prepare_shared(bench) if "shared" in chosen else []
    for n, latency in enumerate(bench.settings.latencies_ms):
        scene.set_latency_ms(latency)
        for workload in chosen:
            if workload in LATENCY_FREE and n > 0:
                continue
            with _timed(bench, workload, latency):
                _one(bench, workload, latency, meta, seq, shared)
            checkpoint()


def _one(
    bench: Bench,
    workload: str,
    latency: int,
    meta: wl_meta.MetaData | None,
    seq: list[str],
    shared: list[str],
) -> None:
    if workload == "info" and meta is not None:
        wl_meta.run_info(bench, latency, meta)
    elif workload == "ls" and meta is not None:
        wl_meta.run_ls(bench, latency, meta)
    elif workload == "status-rate" and meta is not None:
        wl_procs.run_rate(bench, latency, meta.files)
    elif workload == "seq-read":
        wl_reads.run_seq(bench, latency, seq)
    elif workload == "random-read":
        wl_reads.run_random(bench, latency, seq)
    elif workload == "shared":
        wl_procs.run_shared(bench, latency, shared)
