"""Metrics summed across the worker's processes: the primary's text with the fronts' counters
added in, series by series.

Chosen over prometheus_client's multiprocess mode, which would move every metric of the
primary into memory-mapped files named by an environment variable set before import, and
cannot carry the primary's collectors computed at scrape time (page store and metastore
state). Here the fronts keep ordinary registries, the primary reads each front's text on its
private socket when it is scraped, and sums what adds up: counters, histograms and summaries
of the same name and labels (the CPU seconds of ``process_cpu_seconds`` too). A gauge is the
primary's: a front's levels (memory, open files) are not the worker's. ``*_created``
timestamps are dropped, as a sum has no creation time.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

_ADDED = frozenset({"counter", "histogram", "summary"})


def summed(own: bytes, others: Sequence[bytes]) -> bytes:
    """``own`` (exposition text) with the counters, histograms and summaries of ``others``
    added to the series of the same name and labels (new series appended)."""
    families: dict[str, Metric] = {}
    for index, text in enumerate([own, *others]):
        for family in text_string_to_metric_families(text.decode()):
            kept = families.get(family.name)
            if kept is None and (index == 0 or family.type in _ADDED):
                families[family.name] = _without_created(family)
            elif kept is not None and family.type in _ADDED and kept.type == family.type:
                _add(kept, family)
    registry = CollectorRegistry()
    registry.register(_Fixed(list(families.values())))
    return generate_latest(registry)


def _without_created(family: Metric) -> Metric:
    family.samples = [s for s in family.samples if not s.name.endswith("_created")]
    return family


def _add(into: Metric, family: Metric) -> None:
    index = {_series(s): i for i, s in enumerate(into.samples)}
    for sample in family.samples:
        if sample.name.endswith("_created"):
            continue
        at = index.get(_series(sample))
        if at is None:
            index[_series(sample)] = len(into.samples)
            into.samples.append(sample)
        else:
            kept = into.samples[at]
            into.samples[at] = Sample(kept.name, kept.labels, kept.value + sample.value)


def _series(sample: Sample) -> tuple[str, tuple[tuple[str, str], ...]]:
    return sample.name, tuple(sorted(sample.labels.items()))


class _Fixed:
    """A collector of families already made. Stateless once built."""

    def __init__(self, families: Iterable[Metric]) -> None:
        self._families = list(families)

    def collect(self) -> Iterator[Metric]:
        return iter(self._families)
