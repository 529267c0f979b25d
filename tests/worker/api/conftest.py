"""Fixtures of the API tests."""

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.worker.conftest import Api
from worker.service import WorkerService


@pytest.fixture
def web(service: WorkerService, data_dir: Path) -> Iterator[Callable[..., httpx.Response]]:
    """``web(method, path under data_dir, op, **params)``."""
    client = Api(service)
    base = f"/webhdfs/v1/file{data_dir}"

    def call(method: str, path: str, op: str, **params: Any) -> httpx.Response:
        content = params.pop("content", None)
        return client.request(method, base + path, params={"op": op, **params}, content=content)

    yield call
    client.close()
