"""The console's figures: sampled history, the most-read files, histogram quantiles."""

import threading

import pytest

from worker.insight import History, TopFiles, histogram_quantiles


def test_history_keeps_the_newest_samples_with_their_time() -> None:
    now = [100.0]
    counts = {"bytes_from_cache": 0}
    history = History(lambda: dict(counts), period_s=5, size=3, clock=lambda: now[0])
    for step in range(5):
        counts["bytes_from_cache"] = step * 10
        now[0] += 5
        history.sample()
    samples = history.samples()
    assert [s["at"] for s in samples] == [115.0, 120.0, 125.0]
    assert [s["bytes_from_cache"] for s in samples] == [20, 30, 40]
    assert [s["at"] for s in history.samples(since=120.0)] == [125.0]


def test_a_failing_read_leaves_a_gap_and_sampling_goes_on() -> None:
    calls = []
    sampled = threading.Event()

    def read() -> dict[str, int]:
        calls.append(1)
        if len(calls) == 1:
            raise OSError("disk gone for a moment")
        sampled.set()
        return {"page_hits": 1}

    history = History(read, period_s=0.01)
    history.start()
    history.start()  # idempotent: one sampler
    assert sampled.wait(10)
    history.close()
    assert history.samples()[0]["page_hits"] == 1


def test_top_files_rank_by_reads_and_stay_bounded() -> None:
    top = TopFiles(kept=4)
    for _ in range(5):
        top.record("s3://b/hot", 100)
    for _ in range(3):
        top.record("s3://b/warm", 10)
    for name in ("a", "b", "c"):  # the table fills: the least read half goes
        top.record(f"s3://b/cold-{name}", 1)
    ranked = top.top(10)
    assert [f.uri for f in ranked[:2]] == ["s3://b/hot", "s3://b/warm"]
    assert (ranked[0].reads, ranked[0].bytes) == (5, 500)
    assert len(ranked) <= 4
    top.forget("s3://b/hot")
    assert top.top(1)[0].uri == "s3://b/warm"


@pytest.mark.parametrize(
    ("buckets", "expected"),
    [
        ([], {0.5: None, 0.99: None}),
        ([(0.01, 0), (0.1, 0), (float("inf"), 0)], {0.5: None, 0.99: None}),
        # 10 observations, all between 10 and 100 ms: the median is interpolated inside.
        ([(0.01, 0), (0.1, 10), (float("inf"), 10)], {0.5: 0.055, 0.99: 0.0991}),
        # A quantile in the +Inf bucket is answered with the highest finite bound.
        ([(0.01, 5), (1.0, 5), (float("inf"), 10)], {0.5: 0.01, 0.99: 1.0}),
    ],
)
def test_histogram_quantiles_as_prometheus_computes_them(
    buckets: list[tuple[float, float]], expected: dict[float, float | None]
) -> None:
    found = histogram_quantiles(buckets, expected)
    for q, value in expected.items():
        assert found[q] == (None if value is None else pytest.approx(value))
