"""The page file format: block checksums, so a range verifies only the blocks it falls in."""

from __future__ import annotations

import os

import pytest

from pagestore.page import CorruptPageError
from pagestore.pagefile import (
    BLOCK_SIZE,
    ShortPageError,
    WrongPageError,
    encode_header,
    header_size,
    parse_header,
    verify,
)

PAGE_SIZE = 1 << 20
NAME = f"{'a' * 64}.{'0' * 32}.7"


def page_file(data: bytes, page_size: int = PAGE_SIZE, name: str = NAME) -> bytes:
    return encode_header(name, data, page_size) + data


def check_range(raw: bytes, length: int, offset: int, size: int) -> bytes:
    """Parse, read the covering blocks of ``[offset, offset + size)`` and verify them, as a
    reader does; the bytes asked for."""
    header = parse_header(raw, PAGE_SIZE, NAME, length)
    start, end = header.blocks(offset, size)
    base = header_size(PAGE_SIZE)
    verify(header, start, [memoryview(raw)[base + start : base + end]])
    return raw[base + offset : base + offset + size]


@pytest.mark.parametrize("length", [0, 1, BLOCK_SIZE - 1, BLOCK_SIZE, BLOCK_SIZE + 1, PAGE_SIZE])
def test_a_page_verifies_whole(length: int) -> None:
    data = os.urandom(length)
    assert check_range(page_file(data), length, 0, length) == data


def test_every_page_of_a_size_has_the_same_header_size() -> None:
    sizes = {len(encode_header(NAME, os.urandom(n), PAGE_SIZE)) for n in (0, 5, PAGE_SIZE)}
    assert sizes == {header_size(PAGE_SIZE)}
    assert header_size(PAGE_SIZE) == 40 + 8 * (PAGE_SIZE // BLOCK_SIZE)
    assert header_size(4096) == 48  # a page smaller than a block has one block


@pytest.mark.parametrize(
    ("offset", "size", "span"),
    [
        (0, BLOCK_SIZE, (0, BLOCK_SIZE)),
        (BLOCK_SIZE, BLOCK_SIZE, (BLOCK_SIZE, 2 * BLOCK_SIZE)),
        (10, 20, (0, BLOCK_SIZE)),
        (BLOCK_SIZE - 1, 2, (0, 2 * BLOCK_SIZE)),
        (PAGE_SIZE - 100, 100, (PAGE_SIZE - BLOCK_SIZE, PAGE_SIZE)),
        (0, PAGE_SIZE, (0, PAGE_SIZE)),
    ],
)
def test_a_range_covers_only_its_blocks(offset: int, size: int, span: tuple[int, int]) -> None:
    header = parse_header(page_file(bytes(PAGE_SIZE)), PAGE_SIZE, NAME, PAGE_SIZE)
    assert header.blocks(offset, size) == span


def test_a_flipped_byte_fails_its_block_only() -> None:
    data = os.urandom(5 * BLOCK_SIZE + 17)
    raw = bytearray(page_file(data))
    raw[header_size(PAGE_SIZE) + 3 * BLOCK_SIZE + 5] ^= 1
    torn = bytes(raw)
    assert check_range(torn, len(data), 0, 3 * BLOCK_SIZE) == data[: 3 * BLOCK_SIZE]
    assert check_range(torn, len(data), 5 * BLOCK_SIZE, 17) == data[5 * BLOCK_SIZE :]
    with pytest.raises(CorruptPageError, match="block 3"):
        check_range(torn, len(data), 3 * BLOCK_SIZE + 100, 1)


def test_a_span_split_over_buffers_verifies_as_one() -> None:
    data = os.urandom(3 * BLOCK_SIZE)
    header = parse_header(page_file(data), PAGE_SIZE, NAME, len(data))
    view = memoryview(data)
    verify(header, 0, [view[:100], view[100 : 2 * BLOCK_SIZE + 5], view[2 * BLOCK_SIZE + 5 :]])
    altered = bytearray(data[100:])
    altered[0] ^= 1
    with pytest.raises(CorruptPageError, match="block 0"):
        verify(header, 0, [view[:100], memoryview(altered)])
    with pytest.raises(ShortPageError):
        verify(header, 0, [view[: BLOCK_SIZE + 1]])


@pytest.mark.parametrize("position", [0, 5, 12, 16, 24, 32, 40, 100])
def test_an_altered_header_is_caught(position: int) -> None:
    raw = bytearray(page_file(b"hello"))
    raw[position] ^= 1
    with pytest.raises(CorruptPageError):
        parse_header(bytes(raw), PAGE_SIZE, NAME, 5)


def test_a_torn_header_is_short() -> None:
    with pytest.raises(ShortPageError):
        parse_header(page_file(b"hello")[:50], PAGE_SIZE, NAME, 5)


def test_another_pages_file_is_not_taken_for_this_one() -> None:
    other = f"{'a' * 64}.{'0' * 32}.8"
    with pytest.raises(WrongPageError):
        parse_header(page_file(b"hello", name=other), PAGE_SIZE, NAME, 5)
    with pytest.raises(WrongPageError):
        parse_header(page_file(b"hello"), PAGE_SIZE, NAME, 6)


def test_a_page_of_another_page_size_is_refused() -> None:
    with pytest.raises(CorruptPageError, match="another layout"):
        parse_header(page_file(b"hello", page_size=4 * PAGE_SIZE), PAGE_SIZE, NAME, 5)
