"""The goals of issue 11, checked against a run's figures.

Each goal picks the figures it needs from the result; a goal whose figures are missing (a
contender not built, a workload not run, a quick run without 32 clients) is ``n/a`` with the
reason, never met by default. Warm figures do not depend on the object store's latency, so warm
goals use the run's first latency; cold goals are checked at every latency.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from bench.side.results import Figure, RunResult

DORA_FSSPEC = "dora fsspec"
SHORT_CIRCUIT = "dora fsspec + short-circuit"
NEAR_CACHE = "dora fsspec + near-cache"
FAST_PATH = "dora fsspec + fast path (default)"


@dataclass
class Verdict:
    """A goal checked: what was measured, the target, met (None: could not be checked), and
    the figures it rests on (their profiles are the finding for a missed goal)."""

    goal: str
    text: str
    measured: str
    target: str
    met: bool | None
    figures: list[Figure] = field(default_factory=list)


def _best(
    result: RunResult, workload: str, rows: list[str], metric: str, **params: object
) -> Figure | None:
    """Of these rows, the best measured figure at the first latency (or latency-free)."""
    latency = _first_latency(result)
    found = []
    for row in rows:
        figure = result.find(workload, row, metric, latency, **params)
        if figure is None:
            figure = result.find(workload, row, metric, None, **params)
        if figure is not None and figure.measured:
            found.append(figure)
    if not found:
        return None
    higher = found[0].better == "higher"
    return max(found, key=lambda f: f.median if higher else -f.median)


def _first_latency(result: RunResult) -> int | None:
    latencies = result.settings.get("latencies_ms") or [None]
    first: int | None = latencies[0]
    return first


def _largest(result: RunResult, workload: str, param: str) -> object:
    values = [f.params.get(param) for f in result.figures if f.workload == workload]
    numbers = [v for v in values if isinstance(v, int)]
    return max(numbers) if numbers else None


def _missing(goal: str, text: str, target: str, why: str) -> Verdict:
    return Verdict(goal, text, f"n/a ({why})", target, None)


def seq_warm(result: RunResult) -> Iterator[Verdict]:
    text, target = (
        "warm sequential read, fsspec client",
        ">= blockcache warm and >= 80% of raw local",
    )
    size = _largest(result, "seq-read", "size_mb")
    dora = _best(
        result,
        "seq-read",
        [f"{FAST_PATH}, warm", f"{SHORT_CIRCUIT}, warm", f"{DORA_FSSPEC}, warm"],
        "MiB/s",
        size_mb=size,
    )
    block = _best(result, "seq-read", ["blockcache::s3, warm"], "MiB/s", size_mb=size)
    local = _best(result, "seq-read", ["raw local file"], "MiB/s", size_mb=size)
    if dora is None or block is None or local is None:
        yield _missing("seq-warm", text, target, "figures missing")
        return
    need = max(block.median, 0.8 * local.median)
    measured = (
        f"{dora.median:,.0f} MiB/s ({dora.row}, {size} MB) = {dora.median / block.median:.2f}x "
        f"blockcache, {dora.median / local.median:.0%} of raw local"
    )
    yield Verdict("seq-warm", text, measured, target, dora.median >= need, [dora])


def _at_most(
    goal: str, text: str, workload: str, rows: list[str], metric: str, limit: float, unit: str
) -> Callable[[RunResult], Iterator[Verdict]]:
    def check(result: RunResult) -> Iterator[Verdict]:
        target = f"<= {limit:g} {unit}"
        figure = _best(result, workload, rows, metric)
        if figure is None:
            yield _missing(
                goal, text, target, "not built" if _not_built(result, rows) else "not measured"
            )
            return
        measured = f"{figure.median:.3g} {unit} ({figure.row})"
        yield Verdict(goal, text, measured, target, figure.median <= limit, [figure])

    return check


def _not_built(result: RunResult, rows: list[str]) -> bool:
    names = [row.rsplit(", ", 1)[0] for row in rows]
    return all(result.contenders.get(name, "ok") != "ok" for name in names)


def status_rate(result: RunResult) -> Iterator[Verdict]:
    text, target = "status calls/s, one worker, 32 clients", ">= 5,000 calls/s"
    clients = _largest(result, "status-rate", "clients")
    figures = [
        f
        for f in result.figures
        if f.workload == "status-rate" and f.measured and f.params.get("clients") == clients
    ]
    if not figures:
        yield _missing("status-rate", text, target, "not measured")
        return
    best = max(figures, key=lambda f: f.median)
    note = "" if clients == 32 else f"; only {clients} clients in this run"
    measured = f"{best.median:,.0f} calls/s ({best.row}, {best.params.get('mode')}{note})"
    yield Verdict(
        "status-rate",
        text,
        measured,
        target,
        best.median >= 5000 if clients == 32 else None,
        [best],
    )


def seq_cold(result: RunResult) -> Iterator[Verdict]:
    text, target = "cold sequential read vs direct s3fs", ">= 90% of s3fs"
    size = _largest(result, "seq-read", "size_mb")
    for latency in result.settings.get("latencies_ms", []):
        dora = result.find("seq-read", f"{DORA_FSSPEC}, cold", "MiB/s", latency, size_mb=size)
        peer = result.find("seq-read", "s3fs", "MiB/s", latency, size_mb=size)
        goal = f"seq-cold-{latency}ms"
        if dora is None or peer is None or not dora.measured or not peer.measured:
            yield _missing(goal, f"{text} @{latency} ms", target, "not measured")
            continue
        ratio = dora.median / peer.median
        measured = f"{ratio:.0%} ({dora.median:,.0f} vs {peer.median:,.0f} MiB/s, {size} MB)"
        yield Verdict(goal, f"{text} @{latency} ms", measured, target, ratio >= 0.9, [dora])


def shared_once(result: RunResult) -> Iterator[Verdict]:
    text, target = (
        "shared dataset, N processes: object-store bytes",
        "<= 1.1x the dataset (once per host)",
    )
    for latency in result.settings.get("latencies_ms", []):
        figure = result.find("shared", f"{DORA_FSSPEC}, cold", "UFS bytes", latency)
        goal = f"shared-{latency}ms"
        if figure is None or not figure.measured:
            yield _missing(goal, f"{text} @{latency} ms", target, "not measured")
            continue
        measured = f"{figure.median:.2f}x the dataset ({figure.params.get('processes')} processes)"
        yield Verdict(
            goal, f"{text} @{latency} ms", measured, target, figure.median <= 1.1, [figure]
        )


GOALS: tuple[Callable[[RunResult], Iterator[Verdict]], ...] = (
    seq_warm,
    _at_most(
        "random-warm",
        "warm random 64 KB read, p50",
        "random-read",
        [f"{FAST_PATH}, warm", f"{SHORT_CIRCUIT}, warm", f"{DORA_FSSPEC}, warm"],
        "p50",
        0.05,
        "ms",
    ),
    _at_most(
        "info-near",
        "warm info(), p50, from the near-cache",
        "info",
        [f"{NEAR_CACHE}, warm"],
        "p50",
        0.1,
        "ms",
    ),
    _at_most(
        "info-worker",
        "warm info(), p50, from the worker",
        "info",
        [f"{DORA_FSSPEC}, warm"],
        "p50",
        0.5,
        "ms",
    ),
    _at_most(
        "ls-near",
        "warm ls of the directory, p50, from the near-cache",
        "ls",
        [f"{NEAR_CACHE}, warm"],
        "p50",
        0.3,
        "ms",
    ),
    _at_most(
        "ls-worker",
        "warm ls of the directory, p50, from the worker",
        "ls",
        [f"{DORA_FSSPEC}, warm"],
        "p50",
        5.0,
        "ms",
    ),
    status_rate,
    seq_cold,
    shared_once,
)


def check(result: RunResult) -> list[Verdict]:
    return [verdict for goal in GOALS for verdict in goal(result)]
