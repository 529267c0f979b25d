"""Open files of the ``dora`` filesystem: the read-ahead cache that hands large reads over as
fetched, alone and in files read through the real worker app."""

import os
from collections.abc import Callable
from pathlib import Path

from worker.client.file import DoraFile, PassingReadAhead
from worker.client.filesystem import DoraFileSystem

BLOCK = 1000


def cache_over(content: bytes) -> tuple[PassingReadAhead, list[tuple[int, int]]]:
    """A cache over ``content`` in blocks of ``BLOCK``, and the ranges it fetched."""
    fetched: list[tuple[int, int]] = []

    def fetch(start: int, end: int) -> bytes:
        fetched.append((start, end))
        return content[start:end]

    return PassingReadAhead(BLOCK, fetch, len(content)), fetched


def test_small_reads_are_read_ahead_and_large_ones_fetched_exactly() -> None:
    content = os.urandom(10 * BLOCK)
    cache, fetched = cache_over(content)
    assert cache._fetch(0, 10) == content[:10]
    assert cache._fetch(10, 500) == content[10:500]
    assert fetched == [(0, 10 + BLOCK)]  # one fetch, a block past the first read
    assert cache._fetch(2000, 5000) == content[2000:5000]
    assert cache._fetch(5000, 10 * BLOCK + 7) == content[5000:]  # cut at the end
    assert fetched[1:] == [(2000, 5000), (5000, 10 * BLOCK)]
    assert cache._fetch(20, 30) == content[20:30]  # what was read ahead is still held
    assert len(fetched) == 3
    assert cache._fetch(10 * BLOCK, 10 * BLOCK + 5) == b""


def test_a_large_read_is_handed_over_as_fetched() -> None:
    content = os.urandom(10 * BLOCK)
    got: list[bytes] = []

    def fetch(start: int, end: int) -> bytes:
        got.append(content[start:end])
        return got[-1]

    cache = PassingReadAhead(BLOCK, fetch, len(content))
    assert cache._fetch(0, 4 * BLOCK) is got[0]  # not copied into a cache and out again


def test_a_large_read_from_within_the_held_block_fetches_only_the_rest() -> None:
    content = os.urandom(10 * BLOCK)
    cache, fetched = cache_over(content)
    assert cache._fetch(0, 100) == content[:100]  # holds [0, 1100)
    assert cache._fetch(100, 3000) == content[100:3000]
    assert fetched == [(0, 100 + BLOCK), (100 + BLOCK, 3000)]
    assert cache.total_requested_bytes == 3000


def test_streamed_and_mixed_reads_through_the_worker(
    make_fs: Callable[..., DoraFileSystem], data_dir: Path
) -> None:
    content = os.urandom(3 * 1024 * 1024 + 11)
    (data_dir / "s.bin").write_bytes(content)
    uri = f"file://{data_dir}/s.bin"
    for short_circuit in (False, True):
        fs = make_fs(short_circuit=short_circuit)
        fs.cat_file(uri)  # the worker keeps the pages
        with fs.open(uri, "rb", block_size=256 * 1024) as f:
            assert isinstance(f, DoraFile) and isinstance(f.cache, PassingReadAhead)
            parts = [f.read(1024 * 1024) for _ in range(4)]
            assert b"".join(parts) == content and f.read(10) == b""
            assert f.cache.total_requested_bytes == len(content)  # nothing read twice
            f.seek(7)
            mixed = [f.read(5), f.read(600_000), f.readline(), f.read()]
            assert b"".join(mixed) == content[7:]
