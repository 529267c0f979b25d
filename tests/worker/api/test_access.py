"""The access log: one line per request with method, path (no credentials), status, bytes and
duration, when ``dora.worker.http.access.log`` is on; nothing when it is off."""

from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from tests.worker.conftest import Api
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


def test_off_by_default(api: Api, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("INFO", logger="worker.access")
    api.get("/healthz")
    assert access_lines(caplog) == []
