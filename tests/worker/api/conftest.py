"""Fixtures of the API tests."""

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.worker.api.s3_support import BUCKET, S3Api
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


@pytest.fixture
def s3_service(make_service: Callable[..., WorkerService], data_dir: Path) -> WorkerService:
    return make_service(
        "dora.worker.page.store.page.size=64KB",
        f"dora.worker.s3.buckets={BUCKET}=file://{data_dir}",
        "dora.worker.s3.anonymous=true",
    )


@pytest.fixture
def s3(s3_service: WorkerService) -> Iterator[S3Api]:
    client = S3Api(s3_service)
    yield client
    client.close()
