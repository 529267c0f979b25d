"""PNG plots of a run (matplotlib, no display needed): one file per workload, one panel per
latency and size, the median as a bar or point with the min-max range of the repetitions."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # the backend must be chosen first
from matplotlib.axes import Axes

from bench.side.results import Figure, RunResult

COLOURS = {"limit": "#7f7f7f", "peer": "#1f77b4", "dora": "#ff7f0e"}
# The metric each workload's plot shows, and whether its axis is logarithmic.
BARS = {
    "info": ("p50", True),
    "ls": ("p50", True),
    "seq-read": ("MiB/s", True),
    "random-read": ("p50", True),
    "shared": ("UFS bytes", False),
}
LINES = {
    "status-rate": ("clients", ["calls/s"]),
    "growth-status": ("statuses", ["memory/status", "lookup", "disk/status"]),
    "growth-pages": ("pages_mb", ["index memory/page", "64KB read p50", "restore"]),
}


def _groups(figures: Iterable[Figure]) -> dict[str, list[Figure]]:
    """Figures by panel title: latency and the parameters other than the x axis."""
    panels: dict[str, list[Figure]] = {}
    for figure in figures:
        parts = [] if figure.latency_ms is None else [f"{figure.latency_ms} ms"]
        parts += [f"{k}={v}" for k, v in figure.params.items()]
        panels.setdefault(", ".join(parts), []).append(figure)
    return panels


def _bars(axis: Axes, figures: list[Figure], title: str, log: bool) -> None:
    rows = [f.row for f in figures]
    y = range(len(figures))
    for n, figure in enumerate(figures):
        if not figure.measured:
            axis.text(
                0.01,
                n,
                str(figure.na).split(":")[0],
                va="center",
                transform=axis.get_yaxis_transform(),
                fontsize=7,
                color="grey",
            )
            continue
        error = [[figure.median - figure.low], [figure.high - figure.median]]
        axis.barh(
            n, figure.median, xerr=error, color=COLOURS.get(figure.kind, "#2ca02c"), capsize=2
        )
    axis.set_yticks(list(y), rows, fontsize=7)
    axis.invert_yaxis()
    first = figures[0]
    axis.set_xlabel(f"{first.metric} ({first.unit}, {first.better} is better)", fontsize=8)
    axis.set_title(title, fontsize=9)
    if log and any(f.measured and f.low > 0 for f in figures):
        axis.set_xscale("log")


def draw_bars(result: RunResult, workload: str, path: Path) -> bool:
    metric, log = BARS[workload]
    chosen = [f for f in result.figures if f.workload == workload and f.metric == metric]
    if not chosen:
        return False
    panels = _groups(chosen)
    height = sum(0.3 * len(p) + 1.0 for p in panels.values())
    fig, axes = plt.subplots(len(panels), 1, figsize=(8, max(2.5, height)), squeeze=False)
    for axis, (title, figures) in zip(axes[:, 0], panels.items(), strict=True):
        _bars(axis, figures, f"{workload}: {title}", log)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return True


def draw_lines(result: RunResult, workload: str, path: Path) -> bool:
    x_param, metrics = LINES[workload]
    chosen = [
        f for f in result.figures if f.workload == workload and f.measured and f.metric in metrics
    ]
    if not chosen:
        return False
    present = [m for m in metrics if any(f.metric == m for f in chosen)]
    fig, axes = plt.subplots(1, len(present), figsize=(4.2 * len(present), 3.4), squeeze=False)
    for axis, metric in zip(axes[0], present, strict=True):
        series: dict[str, list[Figure]] = {}
        for figure in chosen:
            if figure.metric == metric:
                rest = [f"{k}={v}" for k, v in figure.params.items() if k != x_param]
                series.setdefault(", ".join([figure.row, *rest]), []).append(figure)
        for label, figures in series.items():
            figures.sort(key=lambda f: f.params[x_param])
            xs = [f.params[x_param] for f in figures]
            axis.errorbar(
                xs,
                [f.median for f in figures],
                yerr=[[f.median - f.low for f in figures], [f.high - f.median for f in figures]],
                marker="o",
                capsize=2,
                label=label,
            )
        axis.set_xscale("log")
        axis.set_ylim(bottom=0)
        axis.set_xlabel(x_param, fontsize=8)
        unit = next(f.unit for f in chosen if f.metric == metric)
        axis.set_ylabel(f"{metric} ({unit})", fontsize=8)
        axis.legend(fontsize=6)
    fig.suptitle(workload, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return True


def draw_all(result: RunResult, directory: Path) -> dict[str, Path]:
    """Draw every workload the run has; the PNG of each, by workload."""
    directory.mkdir(parents=True, exist_ok=True)
    drawn = {}
    for workload in [*BARS, *LINES]:
        path = directory / f"{workload}.png"
        draw = draw_bars if workload in BARS else draw_lines
        if draw(result, workload, path):
            drawn[workload] = path
        else:
            path.unlink(missing_ok=True)
    return drawn
