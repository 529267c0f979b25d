"""What every workload shares: the sizes of a run (quick or full), the run's context (result,
scene, filters, profiling) and :func:`drive`, which runs contenders side by side.

:func:`drive` interleaves the contenders within each repetition (rep 1 of every contender, then
rep 2, ...) so that a slow drift of the machine's load spreads over all of them instead of
favouring whichever ran first. A contender whose measurement raises is reported ``failed`` and
skipped for the remaining repetitions; the run goes on.
"""

from __future__ import annotations

import os
import re
import shlex
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench.side.contenders import Contender
from bench.side.handles import Handle
from bench.side.profiling import ProfileSpec, Recording, summarize
from bench.side.results import Figure, Profile, RunResult
from bench.side.services import Scene

MB = 1 << 20


@dataclass(frozen=True)
class Settings:
    """Sizes and repetitions of one run."""

    mode: str
    reps: int
    latencies_ms: tuple[int, ...]
    meta_dirs: int
    meta_files_per_dir: int
    seq_mb: tuple[int, ...]
    random_reads: int
    random_kb: int
    rate_clients: tuple[int, ...]
    rate_seconds: float
    shared_processes: int
    shared_mb: int
    growth_statuses: tuple[int, ...]
    growth_pages_mb: tuple[int, ...]
    # A slow contender stops sampling after this long (keeping at least ``min_samples``).
    budget_s: float
    min_samples: int = 50
    worker_defines: tuple[str, ...] = ("dora.worker.page.store.sizes=4GB",)


FULL = Settings(
    mode="full",
    reps=3,
    latencies_ms=(0, 20),
    meta_dirs=2,
    meta_files_per_dir=1000,
    seq_mb=(256, 1024),
    random_reads=1000,
    random_kb=64,
    rate_clients=(1, 8, 32),
    rate_seconds=3.0,
    shared_processes=4,
    shared_mb=256,
    growth_statuses=(10_000, 100_000, 1_000_000),
    growth_pages_mb=(100, 300, 1000),
    budget_s=4.0,
    min_samples=100,
)

QUICK = Settings(
    mode="quick",
    reps=3,
    latencies_ms=(0,),
    meta_dirs=2,
    meta_files_per_dir=100,
    seq_mb=(32,),
    random_reads=200,
    random_kb=64,
    rate_clients=(1, 8),
    rate_seconds=1.0,
    shared_processes=4,
    shared_mb=32,
    growth_statuses=(10_000, 100_000),
    growth_pages_mb=(32, 64),
    budget_s=1.5,
    worker_defines=("dora.worker.page.store.sizes=1GB",),
)


@dataclass(frozen=True)
class Metric:
    """A quantity a workload reports: its name in the tables, unit, and which way is good."""

    name: str
    unit: str
    better: str  # "lower" or "higher"


@dataclass
class Bench:
    """The context of one run. Not thread-safe."""

    settings: Settings
    result: RunResult
    out_dir: Path
    contender_filter: list[str] = field(default_factory=list)
    profile: ProfileSpec | None = None
    scene: Scene | None = None

    def command(self, workload: str, latency_ms: int | None, contender: str | None) -> str:
        """The command that measures just this figure again."""
        args = [".venv/bin/python", "-m", "bench.side", "--workload", workload]
        if self.settings.mode == "quick":
            args.insert(3, "--quick")
        if latency_ms is not None:
            args += ["--latency-ms", str(latency_ms)]
        if contender is not None:
            args += ["--contender", contender]
        return shlex.join(args)

    def emit(
        self,
        workload: str,
        row: str,
        metric: Metric,
        latency_ms: int | None,
        reps: list[float] | None = None,
        *,
        params: dict[str, Any] | None = None,
        na: str | None = None,
        contender: Contender | None = None,
        state: str = "",
    ) -> Figure:
        """Record a figure (measured, or ``na`` with the reason) and print it; a failure is
        also listed in the run's errors."""
        name = contender.name if contender is not None else None
        figure = Figure(
            workload,
            row,
            metric.name,
            metric.unit,
            metric.better,
            latency_ms,
            reps=list(reps or []),
            params=dict(params or {}),
            na=na,
            contender=name or row,
            state=state,
            kind=contender.kind if contender is not None else "dora",
            command=self.command(workload, latency_ms, name),
        )
        self.result.figures.append(figure)
        error = f"{workload} {row}: {na}"
        if na is not None and na.startswith("failed") and error not in self.result.errors:
            self.result.errors.append(error)
        where = f"[{workload}{'' if latency_ms is None else f' @{latency_ms}ms'}]"
        extra = " ".join(f"{k}={v}" for k, v in figure.params.items())
        if figure.measured:
            value = f"{_num(figure.median)} {metric.unit} ({_num(figure.low)}-{_num(figure.high)})"
        else:
            value = str(na)
        print(f"{where:<24} {row:<38} {extra:<22} {metric.name:<10} {value}", flush=True)
        return figure

    def contenders(self, candidates: list[Contender]) -> list[Contender]:
        if not self.contender_filter:
            return candidates
        return [c for c in candidates if any(p in c.name for p in self.contender_filter)]

    @contextmanager
    def profiled(self, workload: str, row: str, latency_ms: int | None) -> Iterator[None]:
        """Record a py-spy profile around the block if the run's profile spec matches."""
        spec = self.profile
        if spec is None or not spec.matches(workload, row):
            yield
            return
        worker = self.scene.worker if self.scene is not None else None
        pid = worker.pid if spec.target == "worker" and worker is not None else os.getpid()
        ident = re.sub(r"[^A-Za-z0-9.-]+", "_", f"{workload}-{latency_ms}ms-{row}")
        recording = Recording(pid, self.out_dir / "profiles" / f"{ident}.raw")
        try:
            yield
        finally:
            summary = summarize(recording.stop())
        self.result.profiles.append(
            Profile(
                ident,
                workload,
                row,
                latency_ms,
                spec.target,
                pid,
                summary.samples,
                str(recording.raw_file),
                summary.top_self,
                summary.top_total,
                summary.waiting,
            )
        )
        for figure in self.result.figures:
            if (figure.workload, figure.row, figure.latency_ms) == (workload, row, latency_ms):
                figure.profile = ident


def _num(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 1:
        return f"{value:.2f}"
    return f"{value:.3g}"


Measure = Callable[[Handle, str], dict[str, float]]


def drive(
    bench: Bench,
    workload: str,
    latency_ms: int | None,
    contenders: list[Contender],
    metrics: list[Metric],
    measure: Measure,
    params: dict[str, Any] | None = None,
) -> None:
    """Run ``measure(handle, state)`` for every contender and state, ``reps`` times,
    interleaved; emit one figure per metric and row; then, if asked, one more profiled pass.

    ``measure`` returns a value per metric name and brings the handle into ``state`` itself
    (``cold``: drop first; ``warm``: whatever warms it; ``""``: an uncached contender)."""
    handles: dict[str, Handle] = {}
    failed: dict[str, str] = {}
    values: dict[tuple[str, str, str], list[float]] = {}
    chosen = bench.contenders(contenders)
    try:
        for contender in chosen:
            missing = contender.missing()
            if missing is not None:
                failed[contender.name] = missing
                continue
            assert bench.scene is not None
            handles[contender.name] = contender.make(bench.scene.info, workload)
        for _ in range(bench.settings.reps):
            for contender in chosen:
                _one_rep(contender, handles, failed, values, measure)
        for contender in chosen:
            for state in contender.states():
                row = contender.row(state)
                for metric in metrics:
                    reps = values.get((contender.name, state, metric.name), [])
                    na = failed.get(contender.name)
                    bench.emit(
                        workload,
                        row,
                        metric,
                        latency_ms,
                        reps,
                        params=params,
                        na=na if na or reps else "no samples",
                        contender=contender,
                        state=state,
                    )
                if contender.name in handles and contender.name not in failed:
                    with bench.profiled(workload, row, latency_ms):
                        measure(handles[contender.name], state)
    finally:
        for handle in handles.values():
            handle.close()


def _one_rep(
    contender: Contender,
    handles: dict[str, Handle],
    failed: dict[str, str],
    values: dict[tuple[str, str, str], list[float]],
    measure: Measure,
) -> None:
    if contender.name in failed:
        return
    for state in contender.states():
        try:
            got = measure(handles[contender.name], state)
        except Exception as exc:  # noqa: BLE001  # one contender failing must not end the run
            failed[contender.name] = f"failed: {type(exc).__name__}: {exc}"[:200]
            print(f"  {contender.row(state)}: {failed[contender.name]}", flush=True)
            return
        for name, value in got.items():
            values.setdefault((contender.name, state, name), []).append(value)


def sample(
    settings: Settings,
    calls: Sequence[Callable[[], object]],
    prepare: Callable[[], object] | None = None,
) -> tuple[list[float], float]:
    """Time each call (after an untimed ``prepare``, if given) until all ran or the budget is
    spent (at least ``min_samples`` calls). Latencies in seconds, and the seconds spent in the
    timed calls."""
    latencies: list[float] = []
    started = time.perf_counter()
    clock = time.perf_counter
    for n, call in enumerate(calls):
        if n >= settings.min_samples and clock() - started > settings.budget_s:
            break
        if prepare is not None:
            prepare()
        t0 = clock()
        call()
        latencies.append(clock() - t0)
    return latencies, sum(latencies)


def settings_dict(settings: Settings) -> dict[str, Any]:
    return asdict(settings)
