"""A worker service over a local-directory UFS whose listings a test can hold in flight."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from config import load_config
from pagestore.factory import on_disk
from pagestore.options import PageStoreOptions
from ufs.adapter import Ufs
from ufs.deadline import Deadline
from ufs.status import UfsStatus
from worker.assembly import Assembly
from worker.keys import build_registry
from worker.meta.manager import MetadataManager
from worker.service import WorkerService

WAIT_S = 30  # generous bound for a condition that should hold within milliseconds


class HeldUfs(Ufs):
    """The real adapter; a listing of a URI passed to :meth:`hold` is made, then kept from
    returning until :meth:`release` (a job held mid-walk, with the listing's answer taken)."""

    def __init__(self) -> None:
        super().__init__()
        self._held: dict[str, threading.Event] = {}
        self.entered: dict[str, threading.Event] = {}

    def hold(self, uri: str) -> None:
        self._held[uri] = threading.Event()
        self.entered[uri] = threading.Event()

    def release(self, uri: str) -> None:
        self._held[uri].set()

    def release_all(self) -> None:
        for gate in self._held.values():
            gate.set()

    def list(self, uri: str, *, deadline: Deadline | None = None) -> list[UfsStatus]:
        answer = super().list(uri, deadline=deadline)
        gate = self._held.get(uri)
        if gate is not None:
            self.entered[uri].set()
            gate.wait()
        return answer


def open_held_service(work: Path, root: Path, ufs: HeldUfs, *defines: str) -> WorkerService:
    config = load_config(
        build_registry(),
        environ={},
        defines=[
            f"dora.work.dir={work}",
            f"dora.worker.ufs.roots=file://{root}",
            "dora.worker.page.store.page.size=64KB",
            *defines,
        ],
    )
    options = PageStoreOptions.from_config(config)
    pages = on_disk(options)
    meta = MetadataManager.from_config(config, ufs)
    pages.start()
    assert pages.wait_ready(10)
    return Assembly(config, ufs, meta, pages, options.page_size).service


@pytest.fixture
def held_ufs() -> Iterator[HeldUfs]:
    ufs = HeldUfs()
    yield ufs
    ufs.release_all()


@pytest.fixture
def make_service(
    tmp_path: Path, data_dir: Path, held_ufs: HeldUfs
) -> Iterator[Callable[..., WorkerService]]:
    opened: list[WorkerService] = []

    def make(*defines: str) -> WorkerService:
        opened.append(open_held_service(tmp_path / "work", data_dir, held_ufs, *defines))
        return opened[-1]

    yield make
    held_ufs.release_all()
    for service in opened:
        service.close()
