"""``GET /v1/cache/advice``: the page cache's miss-ratio curve over REST, in process over a
local-directory UFS (pages of 64 KiB)."""

import os
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.worker.conftest import Api

PAGE = 64 << 10


def test_a_file_read_three_times_needs_its_pages_and_no_more(api: Api, data_dir: Path) -> None:
    (data_dir / "f.bin").write_bytes(os.urandom(4 * PAGE))
    for _ in range(3):
        assert api.get("/v1/read", params={"path": f"file://{data_dir}/f.bin"}).status_code == 200
    # 4 pages stored, then 8 served from the store, each 3 other pages after its last read.
    advice = api.get("/v1/cache/advice", params={"target_hit": "0.5"}).json()
    assert advice["policy"] == "lru"
    assert advice["references"] == 12
    assert advice["sample_rate"] == 1.0
    assert advice["capacity_needed_bytes"] == 4 * PAGE
    assert advice["max_hit_ratio"] == pytest.approx(8 / 12, abs=1e-6)
    assert advice["hit_ratio_at_capacity"] == pytest.approx(8 / 12, abs=1e-6)
    assert advice["points"] == [
        {"capacity_bytes": 0, "hit_ratio": 0.0},
        {"capacity_bytes": 3 * PAGE, "hit_ratio": 0.0},
        {"capacity_bytes": 4 * PAGE, "hit_ratio": pytest.approx(8 / 12, abs=1e-6)},
    ]
    small = api.get("/v1/cache/advice", params={"capacity": str(3 * PAGE)}).json()
    assert small["hit_ratio_at"] == 0.0
    assert small["target_hit"] == 0.9
    assert small["capacity_needed_bytes"] is None  # first reads are a third of all


def test_before_any_read_there_is_no_advice(api: Api) -> None:
    advice = api.get("/v1/cache/advice").json()
    assert advice["references"] == 0
    assert advice["capacity_needed_bytes"] is None
    assert advice["points"] == []


@pytest.mark.parametrize("target", ["0", "1.5", "high"])
def test_a_target_outside_0_to_1_is_refused(api: Api, target: str) -> None:
    answer = api.get("/v1/cache/advice", params={"target_hit": target})
    assert answer.status_code == 400
    assert "target_hit" in answer.json()["message"]


def test_the_gauges_follow_the_curve(api: Api, data_dir: Path) -> None:
    (data_dir / "f.bin").write_bytes(os.urandom(2 * PAGE))
    for _ in range(11):  # 2 first reads, 20 reads at distance 1: 20/22 hit in 2 pages or more
        api.get("/v1/read", params={"path": f"file://{data_dir}/f.bin"})
    samples = {
        (s.name, s.labels.get("target_hit")): s.value
        for family in text_string_to_metric_families(api.get("/metrics").text)
        for s in family.samples
        if s.name.startswith("dora_cache_advice")
    }
    assert samples == {
        ("dora_cache_advice_hit_ratio", None): pytest.approx(20 / 22),
        ("dora_cache_advice_capacity_bytes", "0.5"): 2 * PAGE,
        ("dora_cache_advice_capacity_bytes", "0.8"): 2 * PAGE,
        ("dora_cache_advice_capacity_bytes", "0.9"): 2 * PAGE,
    }
