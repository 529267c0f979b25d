"""Pins and free over REST v1 (``worker/api/pins.py``), in process, over a local-directory UFS."""

import os
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.worker.conftest import Api
from worker.service import WorkerService

PAGE = 64 * 1024
# 16 pages of 64KB; half of them may be pinned (the default bound).
SMALL_STORE = ("dora.worker.page.store.page.size=64KB", "dora.worker.page.store.sizes=1MB")


def uri(data_dir: Path, name: str) -> str:
    return f"file://{data_dir}/{name}"


@pytest.fixture
def small(make_service: Callable[..., WorkerService]) -> WorkerService:
    return make_service(*SMALL_STORE)


@pytest.fixture
def api(small: WorkerService) -> Iterator[Api]:
    client = Api(small)
    yield client
    client.close()


def write(data_dir: Path, name: str, size: int) -> str:
    path = data_dir / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(os.urandom(size))
    return uri(data_dir, name)


def cached(api: Api, path: str) -> int:
    return int(api.get("/v1/status", params={"path": path}).json()["cached_bytes"])


def scan(api: Api, data_dir: Path, pages: int = 40) -> None:
    """Read other files through the cache, more than twice its capacity."""
    for n in range(pages // 4):
        api.get("/v1/read", params={"path": write(data_dir, f"scan/{n}", 4 * PAGE)})


def test_a_pinned_file_survives_a_scan_and_unpinning_frees_it_to_eviction(
    api: Api, small: WorkerService, data_dir: Path
) -> None:
    hot = write(data_dir, "hot.bin", 3 * PAGE)
    answer = api.request("POST", "/v1/pin", params={"path": hot})
    assert answer.json() == {"pinned": hot, "bytes": 3 * PAGE}
    assert api.get("/v1/status", params={"path": hot}).json()["pinned"] is True
    api.get("/v1/read", params={"path": hot})
    scan(api, data_dir)
    assert cached(api, hot) == 3 * PAGE
    assert small.pages.stats().evictions > 0
    assert "dora_pinned_bytes 196608.0" in api.get("/metrics").text
    assert api.request("POST", "/v1/unpin", params={"path": hot}).json() == {"unpinned": 1}
    assert api.get("/v1/status", params={"path": hot}).json()["pinned"] is False
    scan(api, data_dir)
    assert cached(api, hot) == 0
    metrics = api.get("/metrics").text
    assert "dora_pins_total 1.0" in metrics and "dora_unpins_total 1.0" in metrics


def test_a_pin_past_the_bound_is_refused_naming_the_key(api: Api, data_dir: Path) -> None:
    assert api.request(
        "POST", "/v1/pin", params={"path": write(data_dir, "a", 6 * PAGE)}
    ).is_success
    big = write(data_dir, "b", 3 * PAGE)
    answer = api.request("POST", "/v1/pin", params={"path": big})
    assert answer.status_code == 507
    assert answer.json()["error"] == "PinLimitExceeded"
    assert "dora.worker.page.store.pin.max" in answer.json()["message"]
    assert api.get("/v1/status", params={"path": big}).json()["pinned"] is False


def test_a_directory_is_pinned_recursively_only(api: Api, data_dir: Path) -> None:
    inner = write(data_dir, "d/x.bin", PAGE)
    refused = api.request("POST", "/v1/pin", params={"path": uri(data_dir, "d")})
    assert (refused.status_code, refused.json()["error"]) == (400, "IsADirectory")
    pinned = api.request(
        "POST", "/v1/pin", params={"path": uri(data_dir, "d"), "recursive": "true"}
    )
    assert pinned.json()["bytes"] == PAGE
    later = write(data_dir, "d/later.bin", PAGE)
    for path in (inner, later):
        api.get("/v1/read", params={"path": path})
    scan(api, data_dir)
    assert (cached(api, inner), cached(api, later)) == (PAGE, PAGE)
    listed = api.get("/v1/list", params={"path": uri(data_dir, "d")}).json()["entries"]
    assert {e["name"]: e["pinned"] for e in listed} == {"x.bin": True, "later.bin": True}


def test_free_drops_pages_and_metadata_and_leaves_the_store(api: Api, data_dir: Path) -> None:
    path = write(data_dir, "f.bin", 2 * PAGE)
    before = (data_dir / "f.bin").read_bytes()
    api.get("/v1/read", params={"path": path})
    assert cached(api, path) == 2 * PAGE
    answer = api.request("POST", "/v1/free", params={"path": path})
    assert answer.json()["invalidated"] >= 1
    assert cached(api, path) == 0
    assert (data_dir / "f.bin").read_bytes() == before


def test_pins_are_kept_in_the_work_dir_and_applied_after_a_restart(
    make_service: Callable[..., WorkerService], tmp_path: Path, data_dir: Path
) -> None:
    first = make_service(*SMALL_STORE)
    hot = write(data_dir, "hot.bin", 2 * PAGE)
    write(data_dir, "d/x.bin", PAGE)
    client = Api(first)
    client.request("POST", "/v1/pin", params={"path": hot})
    client.request("POST", "/v1/pin", params={"path": uri(data_dir, "d"), "recursive": "true"})
    for name in ("hot.bin", "d/x.bin"):
        client.get("/v1/read", params={"path": uri(data_dir, name)})
    client.close()
    assert first.pages.stats().pinned_bytes == 3 * PAGE
    saved = tmp_path / "work" / "pins.json"
    assert stat.S_IMODE(saved.stat().st_mode) == 0o600
    first.close()
    second = make_service(*SMALL_STORE)
    assert second.pinned(hot) and second.pinned(uri(data_dir, "d/x.bin"))
    deadline = time.monotonic() + 10  # the prefix's pages are pinned once the restore is done
    while second.pages.stats().pinned_bytes < 3 * PAGE and time.monotonic() < deadline:
        time.sleep(0.05)
    assert second.pages.stats().pinned_bytes == 3 * PAGE
