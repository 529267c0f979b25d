"""Small pages in packs: written together, read and located like page files, removed for good,
restored with their URIs, and the space of emptied packs given back."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from unittest import mock

import pytest

from pagestore.api import Lookup, PageRead, PutResult
from pagestore.cache import PageCache
from pagestore.pack import DEAD, LIVE
from pagestore.page import PageId
from pagestore.shortcircuit import PageFile, PageMiss, read_into
from tests.pagestore.support import (
    FILE_A,
    FILE_B,
    PAGE_SIZE,
    content,
    make_options,
    open_local,
    pack_entries,
    page_files,
    record_files,
    uri,
)

SMALL = 1000
LIMIT = 2048
PAGES = [PageId(f"{n:02d}" + "f" * 62, "v1", 0) for n in range(40)]


@pytest.fixture
def opened(tmp_path: Path) -> Iterator[list[PageCache]]:
    stores: list[PageCache] = []
    yield stores
    for store in stores:
        store.close()


def open_store(root: Path, stores: list[PageCache], pages: int = 64) -> PageCache:
    stores.append(open_local(make_options(root, pages, pack_limit=LIMIT)))
    return stores[-1]


def packs(root: Path) -> list[Path]:
    return sorted(root.rglob("*.pack"))


def closed_pack(root: Path, stores: list[PageCache], pages: list[PageId]) -> Path:
    """Store ``pages`` in a store on ``root``, close it, and return the one pack they went to."""
    store = open_store(root, stores)
    put_small(store, pages)
    store.close()
    (pack,) = packs(root)
    return pack


def put_small(store: PageCache, pages: list[PageId]) -> list[PutResult]:
    since = store.mark()
    return store.put_many([(p, content(p, SMALL), uri(p)) for p in pages], since)


def test_small_pages_share_one_pack_and_no_page_or_record_files(
    tmp_path: Path, opened: list[PageCache]
) -> None:
    store = open_store(tmp_path, opened)
    assert put_small(store, PAGES) == [PutResult.OK] * len(PAGES)
    assert [p.name for p in page_files(tmp_path)] == ["0.pack"]
    assert record_files(tmp_path) == []
    names = [name for name, _ in pack_entries(packs(tmp_path)[0])]
    assert names == [p.key.file_name for p in PAGES]
    for page_id in PAGES:
        assert store.get(page_id) == content(page_id, SMALL)
        assert store.get(page_id, 100, 50) == content(page_id, SMALL)[100:150]
    assert store.stats().puts == len(PAGES) and store.used_bytes == len(PAGES) * SMALL


def test_larger_pages_and_a_zero_limit_keep_page_files(
    tmp_path: Path, opened: list[PageCache]
) -> None:
    store = open_store(tmp_path / "a", opened)
    big = PageId(FILE_A, "v1", 0)
    assert store.put(big, content(big), uri(big)) is PutResult.OK  # a whole page: over LIMIT
    assert packs(tmp_path) == [] and len(page_files(tmp_path)) == 1
    assert len(record_files(tmp_path)) == 1
    plain = open_local(make_options(tmp_path / "b", pack_limit=0))
    opened.append(plain)
    assert put_small(plain, PAGES[:2]) == [PutResult.OK] * 2
    assert packs(tmp_path / "b") == [] and len(page_files(tmp_path / "b")) == 2


def test_a_restart_restores_packed_pages_with_their_uris(
    tmp_path: Path, opened: list[PageCache]
) -> None:
    closed_pack(tmp_path, opened, PAGES)
    store = open_store(tmp_path, opened)
    assert all(store.get(p) == content(p, SMALL) for p in PAGES)
    # The URI came back from the pack: a prefix invalidation finds the files.
    assert store.delete_prefix("s3://bucket/files") == len(PAGES)
    assert not any(store.has_page(p) for p in PAGES)


def test_removed_pages_stay_removed_after_a_restart(
    tmp_path: Path, opened: list[PageCache]
) -> None:
    store = open_store(tmp_path, opened)
    put_small(store, PAGES)
    gone = PAGES[3]
    assert store.delete_file(gone.file_id) == 1
    store.close()  # waits for the janitor's removal
    assert (gone.key.file_name, False) in pack_entries(packs(tmp_path)[0])
    store = open_store(tmp_path, opened)
    assert not store.has_page(gone) and store.page_count == len(PAGES) - 1
    assert store.put(gone, content(gone, SMALL), uri(gone)) is PutResult.OK
    assert store.get(gone) == content(gone, SMALL)
    assert len(packs(tmp_path)) == 2  # restored packs are sealed: the page went to a new one


def test_an_emptied_pack_is_unlinked_and_a_sparse_one_gives_its_space_back(
    tmp_path: Path, opened: list[PageCache]
) -> None:
    store = open_store(tmp_path, opened)
    with mock.patch("pagestore.disk.PACK_BYTES", 10 * SMALL):
        put_small(store, PAGES[:10])  # seals the first pack
        put_small(store, PAGES[10:12])
    _, second = packs(tmp_path)
    for page_id in PAGES[:9]:
        store.delete_file(page_id.file_id)
    store.close()
    # A quarter of the first pack stored no more: its last page was dropped, the pack unlinked.
    assert packs(tmp_path) == [second]
    store = open_store(tmp_path, opened)
    assert not store.has_page(PAGES[9])
    assert [store.has_page(p) for p in PAGES[10:12]] == [True, True]
    assert store.stats().evictions == 0  # counted by the run before the restart


def test_a_flipped_byte_fails_that_page_only(tmp_path: Path, opened: list[PageCache]) -> None:
    store = open_store(tmp_path, opened)
    put_small(store, PAGES[:3])
    pack = packs(tmp_path)[0]
    location = store.locate(PAGES[1].file_id, "v1").pages[0]
    raw = bytearray(pack.read_bytes())
    raw[location.offset + 700] ^= 1
    pack.write_bytes(bytes(raw))
    assert store.read(PAGES[1]) == PageRead(Lookup.FAILED)
    assert store.stats().corrupt_pages == 1 and not store.has_page(PAGES[1])
    assert store.get(PAGES[0]) == content(PAGES[0], SMALL)
    assert store.get(PAGES[2]) == content(PAGES[2], SMALL)
    refill = store.get_or_fill(PAGES[1], lambda: content(PAGES[1], SMALL), uri(PAGES[1]))
    assert refill.fetched and store.get(PAGES[1]) == content(PAGES[1], SMALL)


def test_a_torn_tail_keeps_the_entries_before_it(tmp_path: Path, opened: list[PageCache]) -> None:
    pack = closed_pack(tmp_path, opened, PAGES[:5])
    raw = pack.read_bytes()
    pack.write_bytes(raw[: len(raw) - 10])  # the last page cut short
    with pack.open("ab") as handle:
        handle.write(b"DPK1 torn")  # and a torn entry header after it
    store = open_store(tmp_path, opened)
    assert [store.has_page(p) for p in PAGES[:5]] == [True] * 4 + [False]
    assert all(store.get(p) == content(p, SMALL) for p in PAGES[:4])
    assert (PAGES[4].key.file_name, False) in pack_entries(pack)  # marked, so never tried again


def test_other_files_in_the_packs_directory_are_left_alone(
    tmp_path: Path, opened: list[PageCache]
) -> None:
    pack = closed_pack(tmp_path, opened, PAGES[:2])
    foreign = [pack.parent / "notes.txt", pack.parent / "7.pack.bak"]
    for path in foreign:
        path.write_text("not ours")
    store = open_store(tmp_path, opened)
    for page_id in PAGES[:2]:
        store.delete_file(page_id.file_id)
    store.close()
    assert all(path.read_text() == "not ours" for path in foreign)


def test_short_circuit_reads_a_packed_page_and_sees_it_removed(
    tmp_path: Path, opened: list[PageCache]
) -> None:
    store = open_store(tmp_path, opened)
    put_small(store, PAGES[:3])
    locations = store.locate(PAGES[2].file_id, "v1")
    (page,) = locations.pages
    assert page.path == str(packs(tmp_path)[0]) and page.offset > 0
    buffer = bytearray(SMALL)
    read_into(locations, page, 0, buffer)
    assert bytes(buffer) == content(PAGES[2], SMALL)
    with PageFile(locations, page) as opened_page:
        assert opened_page.read_bytes(10, 20) == content(PAGES[2], SMALL)[10:30]
        assert not opened_page.unlinked()
        store.delete_file(PAGES[2].file_id)
        store.close()  # the removal is done
        assert opened_page.unlinked()
    assert (PAGES[2].key.file_name, False) in pack_entries(packs(tmp_path)[0])


def test_a_client_that_ignores_the_offset_misses(tmp_path: Path, opened: list[PageCache]) -> None:
    store = open_store(tmp_path, opened)
    put_small(store, PAGES[:2])
    locations = store.locate(PAGES[1].file_id, "v1")
    answer = locations.to_dict()
    assert answer["pages"][0][3] == locations.pages[0].offset
    old = type(locations).from_dict({**answer, "pages": [answer["pages"][0][:3]]})
    with pytest.raises(PageMiss):
        read_into(old, old.pages[0], 0, bytearray(SMALL))


def test_pages_of_two_files_put_together_survive_an_invalidation_of_one(
    tmp_path: Path, opened: list[PageCache]
) -> None:
    store = open_store(tmp_path, opened)
    a, b = PageId(FILE_A, "v1", 0), PageId(FILE_B, "v1", 0)
    since = store.mark()
    store.delete_file(FILE_A)  # after the mark: a's bytes may be stale
    results = store.put_many(
        [(a, content(a, SMALL), uri(a)), (b, content(b, SMALL), uri(b))], since
    )
    assert results == [PutResult.REJECTED, PutResult.OK]
    store.close()
    assert pack_entries(packs(tmp_path)[0]) == [(a.key.file_name, False), (b.key.file_name, True)]


def test_state_bytes_are_distinct() -> None:
    assert LIVE != DEAD and len(LIVE) == len(DEAD) == 1


def test_a_page_size_page_is_never_packed(tmp_path: Path, opened: list[PageCache]) -> None:
    store = open_local(make_options(tmp_path, pack_limit=1 << 30))
    opened.append(store)
    page = PageId(FILE_A, "v1", 0)
    assert store.put(page, content(page, PAGE_SIZE + 1), uri(page)) is PutResult.TOO_LARGE
    assert store.put_many([(page, content(page, PAGE_SIZE + 1), uri(page))], store.mark()) == [
        PutResult.TOO_LARGE
    ]


def test_packs_of_another_page_size_are_removed(tmp_path: Path, opened: list[PageCache]) -> None:
    old = closed_pack(tmp_path, opened, PAGES[:2])
    other = open_local(make_options(tmp_path, 8, page_size=2 * PAGE_SIZE, pack_limit=LIMIT))
    assert not any(other.has_page(p) for p in PAGES[:2])
    other.close()  # joins the restore, which removes old layouts once it is done
    assert not old.exists() and not old.parent.exists()


def test_stats_count_the_bytes_of_the_packs(tmp_path: Path, opened: list[PageCache]) -> None:
    store = open_store(tmp_path, opened)
    with mock.patch("pagestore.disk.PACK_BYTES", 10 * SMALL):
        put_small(store, PAGES[:10])  # seals the first pack
        put_small(store, PAGES[10:12])
    first, second = packs(tmp_path)
    sizes = first.stat().st_size + second.stat().st_size
    assert store.stats().pack_bytes == sizes
    assert store.stats().used_bytes == 12 * SMALL < sizes  # data only
    for page_id in PAGES[:10]:
        store.delete_file(page_id.file_id)
    store.close()  # the janitor has unlinked the emptied pack
    assert not first.exists() and store.stats().pack_bytes == second.stat().st_size
