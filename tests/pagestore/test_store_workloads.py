"""Random workloads against a reference model: capacity is never exceeded, LRU order holds, and
after a restart the index is exactly the pages on disk. Local stores run with pages in files of
their own and in packs ("packed"; with packs sealed every few pages, so that packs fill, empty,
turn sparse and go)."""

from __future__ import annotations

import dataclasses
import tempfile
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from unittest import mock

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pagestore.api import PageStore, PutResult
from pagestore.evict import EVICTORS
from pagestore.factory import in_memory
from pagestore.page import PageId, PageKey
from tests.pagestore.support import content, make_options, open_local, stored_pages, uri

PAGE = 64
CAPACITY_PAGES = 5
FILES = ["a" * 64, "b" * 64]
VERSIONS = ["v1", '"v-2"']

page_ids = st.builds(PageId, st.sampled_from(FILES), st.sampled_from(VERSIONS), st.integers(0, 4))
ALL_PAGES = [PageId(f, v, i) for f in FILES for v in VERSIONS for i in range(5)]


def size_of(page_id: PageId) -> int:
    return PAGE if page_id.index < 4 else PAGE // 3  # index 4 is a short last page


operation = st.one_of(
    st.tuples(st.just("put"), page_ids),
    st.tuples(st.just("get"), page_ids),
    st.tuples(st.just("delete"), st.sampled_from(FILES), st.sampled_from([None, *VERSIONS])),
)
workloads = st.lists(operation, max_size=40)
slow = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@contextmanager
def opened(
    kind: str, root: Path, evictor: str = "lru", pack_bytes: int = 4 << 20
) -> Iterator[PageStore]:
    pack_limit = PAGE if kind == "packed" else 0
    options = make_options(root, CAPACITY_PAGES, evictor=evictor, page_size=PAGE)
    options = dataclasses.replace(options, pack_limit=pack_limit)
    store: PageStore = in_memory(options) if kind == "memory" else open_local(options)
    try:
        with mock.patch("pagestore.disk.PACK_BYTES", pack_bytes):
            yield store
    finally:
        store.close()


class LruModel:
    """What an LRU store of CAPACITY_PAGES * PAGE bytes must hold."""

    def __init__(self) -> None:
        self.pages: OrderedDict[PageId, int] = OrderedDict()

    def put(self, page_id: PageId) -> None:
        if page_id in self.pages:
            return
        while sum(self.pages.values()) + size_of(page_id) > CAPACITY_PAGES * PAGE:
            self.pages.popitem(last=False)
        self.pages[page_id] = size_of(page_id)

    def get(self, page_id: PageId) -> None:
        if page_id in self.pages:
            self.pages.move_to_end(page_id)

    def delete(self, file_id: str, version: str | None) -> None:
        for page_id in list(self.pages):
            if page_id.file_id == file_id and version in (None, page_id.version):
                del self.pages[page_id]


def apply(store: PageStore, op: tuple[object, ...], model: LruModel | None = None) -> None:
    if op[0] == "put":
        page_id = op[1]
        assert isinstance(page_id, PageId)
        result = store.put(page_id, content(page_id, size_of(page_id)), uri(page_id))
        # A put right after the page's file was deleted may be refused while the unlink runs.
        assert result in (PutResult.OK, PutResult.REJECTED)
        if model is not None and result is PutResult.OK:
            model.put(page_id)
    elif op[0] == "get":
        page_id = op[1]
        assert isinstance(page_id, PageId)
        data = store.get(page_id)
        assert data is None or data == content(page_id, size_of(page_id))
        if model is not None:
            assert (data is not None) == (page_id in model.pages)
            model.get(page_id)
    else:
        file_id, version = op[1], op[2]
        assert isinstance(file_id, str) and (version is None or isinstance(version, str))
        store.delete_file(file_id, version)
        if model is not None:
            model.delete(file_id, version)


@slow
@given(st.sampled_from(["local", "packed", "memory"]), workloads)
def test_lru_stores_hold_what_the_model_holds(kind: str, ops: list[tuple[object, ...]]) -> None:
    model = LruModel()
    with tempfile.TemporaryDirectory() as root, opened(kind, Path(root)) as store:
        for op in ops:
            apply(store, op, model)
            assert store.used_bytes == sum(model.pages.values()) <= store.capacity_bytes
            assert {p for p in ALL_PAGES if store.has_page(p)} == set(model.pages)


@slow
@given(st.sampled_from(["local", "packed", "memory"]), workloads)
def test_lfu_stores_stay_within_capacity(kind: str, ops: list[tuple[object, ...]]) -> None:
    with tempfile.TemporaryDirectory() as root, opened(kind, Path(root), "lfu", 3 * PAGE) as store:
        for op in ops:
            apply(store, op)
            assert store.used_bytes <= store.capacity_bytes
            held = [p for p in ALL_PAGES if store.has_page(p)]
            assert store.used_bytes == sum(size_of(p) for p in held)


def pages_on_disk(root: Path) -> set[PageKey]:
    """The pages in page files and the pages packs hold (not marked removed)."""
    keys = {PageKey.parse(name) for name in stored_pages(root)}
    return {key for key in keys if key is not None}


@slow
@given(workloads, st.sampled_from(EVICTORS), st.sampled_from(["local", "packed"]))
def test_after_a_restart_the_index_is_the_pages_on_disk(
    ops: list[tuple[object, ...]], evictor: str, kind: str
) -> None:
    with tempfile.TemporaryDirectory() as name:
        root = Path(name)
        with opened(kind, root, evictor, 3 * PAGE) as store:
            for op in ops:
                apply(store, op)
            before = {p for p in ALL_PAGES if store.has_page(p)}
            used = store.used_bytes
        with opened(kind, root, evictor, 3 * PAGE) as store:
            after = {p for p in ALL_PAGES if store.has_page(p)}
            assert after == before and store.used_bytes == used
            assert pages_on_disk(root) == {p.key for p in after}
            for page_id in after:
                assert store.get(page_id) == content(page_id, size_of(page_id))
