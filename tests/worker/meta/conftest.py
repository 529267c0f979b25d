"""Fixtures for the metadata tests: a fake clock, a local UFS changed from outside, managers."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.worker.meta.support import (
    CountingUfs,
    FakeClock,
    Outside,
    cache_options,
    memory_store,
    rocks_store,
)
from worker.meta.manager import MetadataManager
from worker.meta.metastore import Metastore

ManagerFactory = Callable[..., MetadataManager]


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def outside(tmp_path: Path) -> Outside:
    root = tmp_path / "ufs"
    root.mkdir()
    return Outside(root)


@pytest.fixture
def ufs() -> CountingUfs:
    return CountingUfs()


@pytest.fixture(params=["memory", "rocks"])
def store_kind(request: pytest.FixtureRequest) -> str:
    kind: str = request.param
    return kind


@pytest.fixture
def make_manager(
    tmp_path: Path, clock: FakeClock, ufs: CountingUfs, store_kind: str
) -> Iterator[ManagerFactory]:
    """Builds managers over the parametrized metastore; closes them at the end."""
    made: list[MetadataManager] = []

    def factory(**options: Any) -> MetadataManager:
        lifetimes = options.pop("lifetimes", None)
        store: Metastore
        if store_kind == "rocks":
            path = tmp_path / f"metastore{len(made)}"
            store = rocks_store(path, clock, lifetimes) if lifetimes else rocks_store(path, clock)
        else:
            store = memory_store(clock, lifetimes) if lifetimes else memory_store(clock)
        made.append(MetadataManager(cache_options(**options), store, ufs, clock))
        return made[-1]

    yield factory
    for manager in made:
        manager.close()


@pytest.fixture
def manager(make_manager: ManagerFactory) -> MetadataManager:
    return make_manager()
