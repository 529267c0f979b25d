"""Short-circuit reads from page files: right bytes, or a miss with its reason, whatever happens to
the file (evicted mid-read, replaced, corrupted, not readable by the reader)."""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pagestore.cache import PageCache
from pagestore.options import PageDirOptions, PageStoreOptions
from pagestore.page import PageId
from pagestore.pagefile import BLOCK_SIZE
from pagestore.shortcircuit import Miss, PageFile, PageLocation, PageLocations, PageMiss, read_into
from tests.pagestore.support import FILE_A, FILE_B, content, uri

PAGE_SIZE = 16 * BLOCK_SIZE
LAST = PAGE_SIZE - 1000  # the file's last page is shorter

LocalStores = Callable[[PageStoreOptions], PageCache]


@pytest.fixture
def root() -> Iterator[Path]:
    """A page directory any user may traverse (pytest's own temporary directory is private to
    root), so a reader of another user meets only the page files' own permissions."""
    path = Path(tempfile.mkdtemp(prefix="shortcircuit-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path)


@pytest.fixture
def store(root: Path, local_stores: LocalStores) -> PageCache:
    store = local_stores(
        PageStoreOptions((PageDirOptions(root / "pages", 16 * PAGE_SIZE),), PAGE_SIZE)
    )
    for page_id in pages(FILE_A) + pages(FILE_B):
        store.put(page_id, data_of(page_id), uri(page_id))
    return store


def pages(file_id: str) -> list[PageId]:
    return [PageId(file_id, '"etag"', i) for i in range(3)]


def data_of(page_id: PageId) -> bytes:
    return content(page_id, LAST if page_id.index == 2 else PAGE_SIZE)


def located(store: PageCache, file_id: str = FILE_A) -> PageLocations:
    return store.locate(file_id, '"etag"')


def read(locations: PageLocations, index: int, offset: int, size: int) -> bytes:
    buffer = bytearray(size)
    (page,) = (p for p in locations.pages if p.index == index)
    read_into(locations, page, offset, buffer)
    return bytes(buffer)


def missed(locations: PageLocations, index: int = 0) -> Miss:
    with pytest.raises(PageMiss) as caught:
        read(locations, index, 0, 10)
    return caught.value.reason


@pytest.mark.parametrize(
    ("index", "offset", "size"),
    [
        (0, 0, PAGE_SIZE),
        (1, BLOCK_SIZE, BLOCK_SIZE),  # aligned: one block read and verified
        (1, 100, 4 * BLOCK_SIZE),  # unaligned, five blocks read whole into scratch space
        (1, 100, 10 * BLOCK_SIZE),  # unaligned and longer: scratch space only at the ends
        (1, 100, 50),
        (1, BLOCK_SIZE - 10, 2 * BLOCK_SIZE + 20),  # across three blocks, unaligned both ends
        (2, LAST - 70, 70),
        (2, 0, LAST),
        (0, 5, 0),
    ],
)
def test_any_range_reads_right_bytes(store: PageCache, index: int, offset: int, size: int) -> None:
    expected = data_of(pages(FILE_A)[index])[offset : offset + size]
    assert read(located(store), index, offset, size) == expected
    (page,) = (p for p in located(store).pages if p.index == index)
    with PageFile(located(store), page) as opened:
        assert opened.read_bytes(offset, size) == expected


def test_a_range_past_the_data_is_a_caller_error(store: PageCache) -> None:
    with pytest.raises(ValueError, match="outside"):
        read(located(store), 2, LAST - 5, 10)


def test_the_locations_survive_a_round_trip_as_json_data(store: PageCache) -> None:
    locations = located(store)
    assert PageLocations.from_dict(locations.to_dict()) == locations
    foreign = {**locations.to_dict(), "format": 1}
    with pytest.raises(ValueError, match="format"):
        PageLocations.from_dict(foreign)
    with pytest.raises(ValueError, match="malformed"):
        PageLocations.from_dict({**locations.to_dict(), "pages": [[0, "/x"]]})


def test_a_page_evicted_mid_read_is_still_read_whole(store: PageCache) -> None:
    locations = located(store)
    with PageFile(locations, locations.pages[0]) as opened:
        first = bytearray(BLOCK_SIZE)
        opened.read_into(0, first)
        store.delete_file(FILE_A)
        store.close()  # waits until the page files are unlinked
        assert not os.path.exists(locations.pages[0].path)
        rest = bytearray(PAGE_SIZE - BLOCK_SIZE)
        opened.read_into(BLOCK_SIZE, rest)
    assert bytes(first + rest) == data_of(pages(FILE_A)[0])
    assert missed(locations) is Miss.VANISHED


def test_a_file_replaced_by_another_page_is_a_miss(store: PageCache) -> None:
    mine, other = located(store).pages[0], located(store, FILE_B).pages[0]
    shutil.copy(other.path, mine.path)
    assert missed(located(store)) is Miss.WRONG_PAGE


@pytest.mark.parametrize(
    ("replacement", "reason"),
    [
        (lambda data: data[:-1], Miss.SHORT),
        (lambda data: data[:30], Miss.SHORT),
        (lambda data: b"not a page at all" * 100, Miss.CORRUPT),
    ],
    ids=["truncated", "torn-header", "not-a-page"],
)
def test_a_file_replaced_by_something_else_is_a_miss(
    store: PageCache, replacement: Callable[[bytes], bytes], reason: Miss
) -> None:
    locations = located(store)
    path = Path(locations.pages[0].path)
    path.write_bytes(replacement(path.read_bytes()))
    with pytest.raises(PageMiss) as caught:
        read(locations, 0, 0, PAGE_SIZE)
    assert caught.value.reason is reason


def test_a_corrupt_byte_fails_the_blocks_it_is_in_and_no_others(store: PageCache) -> None:
    locations = located(store)
    path = Path(locations.pages[1].path)
    raw = bytearray(path.read_bytes())
    raw[locations.header_size + 2 * BLOCK_SIZE + 7] ^= 0x10
    path.write_bytes(bytes(raw))
    expected = data_of(pages(FILE_A)[1])
    assert read(locations, 1, 0, 2 * BLOCK_SIZE) == expected[: 2 * BLOCK_SIZE]
    with pytest.raises(PageMiss) as caught:
        read(locations, 1, 2 * BLOCK_SIZE + 100, 10)
    assert caught.value.reason is Miss.CORRUPT


def read_as_nobody(locations: PageLocations, page: PageLocation, group: int = 65534) -> Miss | None:
    """Read a page in a child process that dropped root for ``nobody`` in ``group``; its
    miss, if any."""
    pid = os.fork()
    if pid == 0:  # the child: only syscalls and this module's code, then _exit
        code = 99  # whatever else goes wrong must not return into pytest
        try:
            os.setgroups([])
            os.setgid(group)
            os.setuid(65534)
            read_into(locations, page, 0, bytearray(page.size))
            code = 0
        except PageMiss as miss:
            code = 10 + list(Miss).index(miss.reason)
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    assert code in (0, *range(10, 10 + len(Miss))), f"child failed with {code}"
    return None if code == 0 else list(Miss)[code - 10]


def test_a_reader_that_may_not_open_the_file_is_denied(store: PageCache) -> None:
    if os.geteuid() != 0:
        pytest.skip("switching to another user needs root")
    locations = located(store)
    page = locations.pages[0]
    # Page files are 0640 in 0750 directories: the worker's group reads them, no one else.
    assert read_as_nobody(locations, page, group=os.getegid()) is None
    assert read_as_nobody(locations, page) is Miss.DENIED
    os.chmod(page.path, 0o600)
    assert read_as_nobody(locations, page, group=os.getegid()) is Miss.DENIED


@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_a_page_path_that_names_no_regular_file_is_a_miss_at_once(
    store: PageCache, kind: str
) -> None:
    locations = located(store)
    path = locations.pages[0].path
    os.unlink(path)
    if kind == "fifo":
        os.mkfifo(path)  # opened for reading without O_NONBLOCK, it waits for a writer forever
    else:
        os.mkdir(path)
    outcome: list[Miss] = []
    reader = threading.Thread(target=lambda: outcome.append(missed(locations)), daemon=True)
    reader.start()
    reader.join(timeout=30)
    if reader.is_alive():  # unblock the stuck open before failing
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
    assert outcome == [Miss.NOT_A_FILE]
