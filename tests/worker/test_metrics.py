"""The worker's /metrics: its own figures plus the standard process, platform and GC ones, each
with the Prometheus type that matches how it moves."""

import os
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from tests.worker.conftest import Api
from worker.service import WorkerService

PAGE = 64 * 1024  # the page size of the ``service`` fixture


def families(service: WorkerService) -> dict[str, str]:
    text = service.metrics.render().decode()
    return {family.name: family.type for family in text_string_to_metric_families(text)}


def test_process_platform_and_gc_collectors_are_exposed(service: WorkerService) -> None:
    found = families(service)
    assert found["process_resident_memory_bytes"] == "gauge"
    assert found["process_cpu_seconds"] == "counter"
    assert found["python_info"] == "gauge"
    assert found["python_gc_collections"] == "counter"


def test_metastore_pending_is_a_gauge(service: WorkerService) -> None:
    found = families(service)
    assert found["dora_metadata_metastore_pending"] == "gauge"
    assert found["dora_metadata_metastore_flushes"] == "counter"


def page_counts(service: WorkerService) -> tuple[float | None, float | None]:
    registry = service.metrics.registry
    return (
        registry.get_sample_value("dora_page_misses_total"),
        registry.get_sample_value("dora_page_hits_total"),
    )


def test_a_cold_read_counts_each_missed_page_once(
    service: WorkerService, api: Api, data_dir: Path
) -> None:
    pages = 40  # several read-ahead batches (READ_AHEAD_PAGES), the last one partial
    content = os.urandom(pages * PAGE - 100)
    (data_dir / "f.bin").write_bytes(content)
    path = f"file://{data_dir}/f.bin"
    assert page_counts(service) == (0, 0)
    assert api.get("/v1/read", params={"path": path}).content == content  # cold
    assert page_counts(service) == (pages, 0)
    assert api.get("/v1/read", params={"path": path}).content == content  # warm
    assert page_counts(service) == (pages, pages)
