"""Two runs compared figure by figure, with the direction of each figure and its noise."""

from bench.side.compare import compare
from bench.side.results import Figure, RunResult


def run(*figures: Figure) -> RunResult:
    result = RunResult("quick", "cmd", {}, {}, "start")
    result.figures = list(figures)
    return result


def seq(row: str, reps: list[float]) -> Figure:
    return Figure("seq-read", row, "MiB/s", "MiB/s", "higher", 0, reps, {"size_mb": 32})


def p50(row: str, reps: list[float]) -> Figure:
    return Figure("info", row, "p50", "ms", "lower", 0, reps)


def test_better_worse_same_and_unmatched() -> None:
    before = run(seq("dora", [90, 100, 110]), p50("dora", [3, 4, 5]), p50("gone", [1, 1, 1]))
    after = run(seq("dora", [190, 200, 210]), p50("dora", [4, 4.5, 6]), p50("new", [1, 1, 1]))
    lines = compare(before, after)
    assert lines == [
        "seq-read @0ms size_mb=32 | dora | MiB/s: 100 -> 200 MiB/s (2.00x, better)",
        "info @0ms | dora | p50: 4 -> 4.5 ms (1.12x, same)",
        "info @0ms | new | p50: only after",
        "info @0ms | gone | p50: only before",
    ]
    slower = compare(run(p50("dora", [3, 4, 5])), run(p50("dora", [6, 7, 8])))
    assert slower == ["info @0ms | dora | p50: 4 -> 7 ms (1.75x, worse)"]
    assert compare(before, after, "seq-read") == lines[:1]
