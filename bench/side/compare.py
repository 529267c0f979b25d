"""Compare two result files figure by figure: before and after a change.

    .venv/bin/python -m bench.side.compare BEFORE.json AFTER.json [--workload seq-read]

For every figure measured in both runs: the medians, after/before, and whether the change is
beyond the noise (the two min-max ranges do not overlap) and which way (``better``/``worse``
by the figure's own direction). Figures only one run has are listed as such.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from bench.side.results import Figure, RunResult

Key = tuple[str, str, str, int | None, str]


def key(figure: Figure) -> Key:
    params = ", ".join(f"{k}={v}" for k, v in sorted(figure.params.items()))
    return (figure.workload, figure.row, figure.metric, figure.latency_ms, params)


def verdict(before: Figure, after: Figure) -> str:
    """``better``, ``worse`` (the ranges do not overlap) or ``same`` (within the noise)."""
    if after.low > before.high:
        went_up = True
    elif after.high < before.low:
        went_up = False
    else:
        return "same"
    return "better" if went_up == (after.better == "higher") else "worse"


def compare(before: RunResult, after: RunResult, workload: str | None = None) -> list[str]:
    """One line per figure of either run (in the order of ``after``, then ``before``'s rest)."""
    old = {key(f): f for f in before.figures if f.measured}
    new = {key(f): f for f in after.figures if f.measured}
    lines = []
    for k in [*new, *(k for k in old if k not in new)]:
        if workload is not None and k[0] != workload:
            continue
        where = f"{k[0]}{'' if k[3] is None else f' @{k[3]}ms'}"
        label = f"{' '.join(part for part in (where, k[4]) if part)} | {k[1]} | {k[2]}"
        if k not in old or k not in new:
            lines.append(f"{label}: only {'after' if k in new else 'before'}")
            continue
        a, b = old[k], new[k]
        ratio = b.median / a.median if a.median else float("inf")
        lines.append(
            f"{label}: {a.median:.4g} -> {b.median:.4g} {b.unit} ({ratio:.2f}x, {verdict(a, b)})"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--workload")
    args = parser.parse_args()
    before, after = RunResult.load(args.before), RunResult.load(args.after)
    for line in compare(before, after, args.workload):
        print(line)


if __name__ == "__main__":
    main()
