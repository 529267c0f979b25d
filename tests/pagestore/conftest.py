"""Fixtures shared by the page store tests: options, stores of every kind, page content."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pagestore.api import PageStore
from pagestore.cache import PageCache
from pagestore.evict import EVICTORS
from pagestore.factory import in_memory
from pagestore.options import PageStoreOptions
from tests.pagestore.support import (
    PAGE_SIZE,
    StoreFactory,
    make_options,
    open_local,
    open_tiered,
)


@pytest.fixture
def local_stores() -> Iterator[Callable[[PageStoreOptions], PageCache]]:
    """Opens ready page caches on disk and closes them at the end of the test."""
    opened: list[PageCache] = []

    def factory(options: PageStoreOptions) -> PageCache:
        opened.append(open_local(options))
        return opened[-1]

    yield factory
    for store in opened:
        store.close()


KINDS = [(kind, policy) for kind in ("local", "memory") for policy in EVICTORS] + [
    ("tiered", "lru"),
    ("tiered", "s3fifo"),
]
"""Each store under the page cache (``local``: the disk store; ``tiered``: a memory tier of half
its size over it), with each evictor."""


@pytest.fixture(params=KINDS, ids=[f"{kind}-{evictor}" for kind, evictor in KINDS])
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreFactory]:
    """Builds started, ready stores of one implementation and evictor: ``make_store(pages=8)``."""
    kind, evictor = request.param
    opened: list[PageStore] = []

    def factory(pages: int = 8, page_size: int = PAGE_SIZE) -> PageStore:
        options = make_options(tmp_path / str(len(opened)), pages, 1, evictor, page_size)
        store: PageStore = (
            open_local(options)
            if kind == "local"
            else open_tiered(options)
            if kind == "tiered"
            else in_memory(options)
        )
        opened.append(store)
        return store

    yield factory
    for store in opened:
        store.close()


@pytest.fixture
def store(make_store: StoreFactory) -> PageStore:
    return make_store()
