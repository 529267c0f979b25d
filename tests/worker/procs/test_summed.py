"""The primary's metrics with the fronts' counters added in (worker/procs/summed.py)."""

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from worker.procs.summed import summed


def process(requests: int, latency: float, level: float, extra: bool = False) -> bytes:
    registry = CollectorRegistry()
    counter = Counter("dora_errors", "Errors", ["code"], registry=registry)
    counter.labels("NotFound").inc(requests)
    if extra:
        counter.labels("Timeout").inc(1)
    Histogram("dora_request_seconds", "Latency", ["route"], registry=registry).labels(
        "/v1/status"
    ).observe(latency)
    Gauge("dora_level", "A level", registry=registry).set(level)
    return generate_latest(registry)


def values(text: bytes) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text.decode())
        for s in family.samples
    }


def test_counters_and_histograms_add_up_and_gauges_stay_the_primarys() -> None:
    total = values(summed(process(3, 0.002, 5.0), [process(4, 0.2, 7.0, extra=True)]))
    assert total[("dora_errors_total", (("code", "NotFound"),))] == 7
    assert total[("dora_errors_total", (("code", "Timeout"),))] == 1  # a front's own series
    assert total[("dora_request_seconds_count", (("route", "/v1/status"),))] == 2
    assert total[("dora_request_seconds_sum", (("route", "/v1/status"),))] == 0.202
    assert total[("dora_request_seconds_bucket", (("le", "0.005"), ("route", "/v1/status")))] == 1
    assert total[("dora_level", ())] == 5.0
    assert not [name for name, _ in total if name.endswith("_created")]


def test_one_process_is_its_own_text() -> None:
    own = process(3, 0.002, 5.0)
    assert values(summed(own, [])) == {k: v for k, v in values(own).items()
                                       if not k[0].endswith("_created")}  # fmt: skip
