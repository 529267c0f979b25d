"""The result file keeps every figure, profile and fact it was given."""

from pathlib import Path

import pytest

from bench.side.results import Figure, Profile, RunResult, percentile


def test_round_trip(tmp_path: Path) -> None:
    result = RunResult("quick", "cmd", {"reps": 3}, {"cpus": 2}, "start", label="smoke")
    result.figures.append(
        Figure("info", "s3fs", "p50", "ms", "lower", 0, [3.0, 1.0, 2.0], {"files": 10}, kind="peer")
    )
    result.figures.append(Figure("info", "x", "p50", "ms", "lower", 0, na="n/a (not built)"))
    result.profiles.append(
        Profile("id", "info", "s3fs", 0, "worker", 7, 5, "f.raw", [("a (b.py)", 0.5)], [])
    )
    path = tmp_path / "r.json"
    result.save(path)
    again = RunResult.load(path)
    assert again == result
    assert (again.figures[0].median, again.figures[0].low, again.figures[0].high) == (2.0, 1.0, 3.0)
    assert not again.figures[1].measured
    assert again.find("info", "s3fs", "p50", 0, files=10) is again.figures[0]
    assert again.find("info", "s3fs", "p50", 20) is None


def test_percentile_by_nearest_rank() -> None:
    values = [float(n) for n in range(1, 101)]
    assert percentile(values, 50) == 50.0
    assert percentile(values, 99) == 99.0
    assert percentile([5.0], 99) == 5.0
    with pytest.raises(ValueError):
        percentile([], 50)
