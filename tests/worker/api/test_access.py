"""The access log: one line per request with method, path (no credentials), status, bytes and
duration, when ``dora.worker.http.access.log`` is on; nothing when it is off."""

from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from tests.worker.conftest import Api
from ufs.status import file_id
from worker.api import webhdfs_errors
from worker.api.access import loggable_path, outcome
from worker.service import WorkerService


def access_lines(caplog: pytest.LogCaptureFixture) -> list[dict[str, Any]]:
    """The access log's records, as their fields."""
    return [vars(r) | {"line": r.getMessage()} for r in caplog.records if r.name == "worker.access"]


def test_one_line_per_request(
    make_service: Callable[..., WorkerService],
    data_dir: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    (data_dir / "f").write_bytes(b"12345")
    service = make_service("dora.worker.http.access.log=true", "dora.worker.security.token=s")
    api = Api(service, {"Authorization": "Bearer s"})
    caplog.set_level("INFO", logger="worker.access")
    try:
        path = f"file://{data_dir}/f"
        api.get("/v1/read", params={"path": path, "delegation": "secret"})
        api.get("/v1/status", params={"path": path}, headers={"Authorization": "Bearer no"})
    finally:
        api.close()
    read, refused = access_lines(caplog)
    assert read["method"] == "GET"
    assert read["path"] == "/v1/read?path=" + quote(path, safe="")
    assert (read["status"], read["bytes"]) == (200, 5)
    assert read["duration_ms"] >= 0
    assert "secret" not in read["line"]
    assert read["line"].startswith(f"GET {read['path']} 200 5B ")
    assert refused["status"] == 401
    assert (read["cache"], refused["cache"]) == ("miss", "-")
    assert read["client"] == refused["client"] == "127.0.0.1"  # httpx's ASGI transport's


def test_the_cache_outcome_of_each_read(
    make_service: Callable[..., WorkerService],
    data_dir: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    (data_dir / "g").write_bytes(bytes(range(256)) * 1024)  # 256 KiB: four 64 KiB pages
    service = make_service(
        "dora.worker.http.access.log=true", "dora.worker.page.store.page.size=64KB"
    )
    api = Api(service)
    caplog.set_level("INFO", logger="worker.access")
    path = f"file://{data_dir}/g"
    try:
        api.get("/v1/read", params={"path": path, "length": 64 * 1024})  # page 0 and read-ahead
        service.invalidate(service.request(path))
        api.get("/v1/read", params={"path": path, "length": 64 * 1024})
        api.get("/v1/read", params={"path": path, "length": 64 * 1024})
        service.pages.delete_file(file_id(path))
        api.get("/v1/read", params={"path": path, "offset": 0, "length": 64 * 1024})
    finally:
        api.close()
    outcomes = [line["cache"] for line in access_lines(caplog)]
    assert outcomes == ["miss", "miss", "hit", "miss"]
    assert access_lines(caplog)[2]["line"].endswith(" cache=hit")


def test_off_by_default(api: Api, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("INFO", logger="worker.access")
    api.get("/healthz")
    assert access_lines(caplog) == []


def test_the_outcome_of_bytes_from_both_sources_is_partial() -> None:
    served = ({}, {"cache": 1}, {"ufs": 1}, {"cache": 1, "ufs": 1})
    assert [outcome(s) for s in served] == ["-", "hit", "miss", "partial"]


@pytest.mark.parametrize(
    "query",
    [
        "delegation=s3cret",
        "Delegation=s3cret",
        "DELEGATION=s3cret",
        "dElEgAtIoN=s3cret",
        "%44elegation=s3cret",
        "%64%65%6c%65%67%61%74%69%6f%6e=s3cret",
        "op=OPEN&Delegation=s3cret&delegation=s3cret",
        "Token=s3cret",
        "ACCESS_TOKEN=s3cret",
    ],
)
def test_every_spelling_of_a_credential_the_surfaces_accept_is_left_out(query: str) -> None:
    scope = {"path": "/webhdfs/v1/file/x", "query_string": query.encode(), "headers": []}
    accepted = webhdfs_errors.credential(scope)
    logged = loggable_path(scope)
    assert "s3cret" not in logged
    assert accepted in (None, b"s3cret")
    if query.startswith("op=OPEN"):
        assert logged == "/webhdfs/v1/file/x?op=OPEN"
