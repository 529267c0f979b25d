"""The worker's /metrics: its own figures plus the standard process, platform and GC ones, each
with the Prometheus type that matches how it moves."""

from prometheus_client.parser import text_string_to_metric_families

from worker.service import WorkerService


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
