"""Client fixtures: client configs, and a ``dora`` filesystem over the real worker app in process
(``httpx.ASGITransport``) fronting a local directory."""

import threading
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from config import Config, load_config
from ufs.adapter import Ufs
from worker.api.app import create_app
from worker.client import DoraFileSystem
from worker.keys import build_registry
from worker.service import WorkerService

WORKER = "worker-0:28080"


def client_config(*defines: str, workers: str = WORKER) -> Config:
    """A client config independent of the environment running the tests."""
    return load_config(
        build_registry(), environ={}, defines=[f"dora.user.workers={workers}", *defines]
    )


def dora_fs(service: WorkerService, *defines: str, **options: object) -> DoraFileSystem:
    """A fresh (uncached) filesystem talking to ``service`` through its ASGI app."""
    return DoraFileSystem(
        transport=httpx.ASGITransport(app=create_app(service)),
        config=client_config(*defines),
        skip_instance_cache=True,
        **options,
    )


@pytest.fixture
def make_fs(service: WorkerService) -> Callable[..., DoraFileSystem]:
    def make(*defines: str, **options: object) -> DoraFileSystem:
        return dora_fs(service, *defines, **options)

    return make


@pytest.fixture
def fs(service: WorkerService) -> DoraFileSystem:
    return dora_fs(service)


@pytest.fixture
def root(data_dir: Path) -> str:
    """The worker's mount root as a URI."""
    return f"file://{data_dir}"


def refusing() -> httpx.MockTransport:
    """A transport on which every worker refuses connections (none is reachable)."""

    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    return httpx.MockTransport(handler)


def replace_before_later_chunk(
    monkeypatch: pytest.MonkeyPatch, replace: Callable[[], None]
) -> None:
    """Run ``replace`` (which replaces a real file) once, just before the UFS read of the first
    chunk past offset 0: the moment a chunked read through the UFS fallback has checked the
    version of that chunk and is about to read it."""
    real_read = Ufs.read
    lock = threading.Lock()
    done: list[bool] = []

    def read(self: Ufs, uri: str, offset: int, length: int, version: str | None = None) -> bytes:
        with lock:
            if offset > 0 and not done:
                done.append(True)
                replace()
        return real_read(self, uri, offset, length, version)

    monkeypatch.setattr(Ufs, "read", read)
