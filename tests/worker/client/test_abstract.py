"""fsspec's own abstract test suite (copy, get, put, pipe, open) against the ``dora`` filesystem,
through the real worker app fronting a local directory."""

from collections.abc import Callable
from pathlib import Path

import pytest
from fsspec.tests.abstract import (
    AbstractCopyTests,
    AbstractFixtures,
    AbstractGetTests,
    AbstractOpenTests,
    AbstractPipeTests,
    AbstractPutTests,
)

from tests.worker.client.conftest import dora_fs
from worker.client import DoraFileSystem
from worker.service import WorkerService


class DoraLocalFixtures(AbstractFixtures):  # type: ignore[misc]
    @pytest.fixture
    def fs(self, service: WorkerService) -> DoraFileSystem:
        return dora_fs(service)

    @pytest.fixture
    def fs_path(self, data_dir: Path) -> str:
        return f"file://{data_dir}"

    @pytest.fixture
    def fs_join(self) -> Callable[..., str]:
        return lambda *parts: "/".join(parts)


class TestDoraCopy(AbstractCopyTests, DoraLocalFixtures):  # type: ignore[misc]
    pass


class TestDoraGet(AbstractGetTests, DoraLocalFixtures):  # type: ignore[misc]
    pass


class TestDoraPut(AbstractPutTests, DoraLocalFixtures):  # type: ignore[misc]
    pass


class TestDoraPipe(AbstractPipeTests, DoraLocalFixtures):  # type: ignore[misc]
    pass


class TestDoraOpen(AbstractOpenTests, DoraLocalFixtures):  # type: ignore[misc]
    pass
