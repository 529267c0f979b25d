"""A worker service over a local-directory UFS, and a synchronous API client over
``httpx.ASGITransport`` (the real app, in process)."""

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.types import ASGIApp

from config import load_config
from pagestore.page import version_key
from tests.pagestore.support import stored_pages
from ufs.status import file_id
from worker import assembly
from worker.api.app import create_app
from worker.keys import build_registry
from worker.service import WorkerService


class Api:
    """Synchronous calls into the ASGI app (one event loop for the test)."""

    def __init__(
        self,
        service: WorkerService,
        headers: dict[str, str] | None = None,
        app: ASGIApp | None = None,
    ) -> None:
        self.loop = asyncio.new_event_loop()
        transport = httpx.ASGITransport(app=app or create_app(service))
        self.client = httpx.AsyncClient(
            transport=transport, base_url="http://worker", headers=headers or {}
        )

    def request(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        return self.loop.run_until_complete(self.client.request(method, url, **kwargs))

    def get(self, url: str, **kwargs: Any) -> httpx.Response:
        return self.request("GET", url, **kwargs)

    def close(self) -> None:
        self.loop.run_until_complete(self.client.aclose())
        self.loop.close()


def open_assembly(work: Path, roots: str, *defines: str) -> assembly.Assembly:
    """A worker's parts as the worker process builds them (its node and feeds not started)."""
    config = load_config(
        build_registry(),
        environ={},
        defines=[f"dora.work.dir={work}", f"dora.worker.ufs.roots={roots}", *defines],
    )
    assembled = assembly.Assembly.open(config)
    assert assembled.service.pages.wait_ready(10)
    return assembled


def open_service(work: Path, roots: str, *defines: str) -> WorkerService:
    return open_assembly(work, roots, *defines).service


def page_files(work: Path, uri: str, version: str | None = None) -> list[Path]:
    """Page files of ``uri`` (of one version, if given) on disk under the work dir."""
    prefix = file_id(uri) + "." + (version_key(version) if version else "")
    return [p for p in (work / "pages").rglob("*") if p.name.startswith(prefix)]


def pages_stored(work: Path, uri: str, version: str | None = None) -> list[str]:
    """The names of the pages of ``uri`` (of one version, if given) stored under the work dir,
    in page files or in packs."""
    prefix = file_id(uri) + "." + (version_key(version) if version else "")
    return [name for name in stored_pages(work / "pages") if name.startswith(prefix)]


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    path = tmp_path / "data"
    path.mkdir()
    return path


@pytest.fixture
def make_service(tmp_path: Path, data_dir: Path) -> Iterator[Callable[..., WorkerService]]:
    opened: list[WorkerService] = []

    def make(*defines: str) -> WorkerService:
        service = open_service(tmp_path / "work", f"file://{data_dir}", *defines)
        opened.append(service)
        return service

    yield make
    for service in opened:
        service.close()


@pytest.fixture
def service(make_service: Callable[..., WorkerService]) -> WorkerService:
    return make_service("dora.worker.page.store.page.size=64KB")


@pytest.fixture
def api(service: WorkerService) -> Iterator[Api]:
    client = Api(service)
    yield client
    client.close()
