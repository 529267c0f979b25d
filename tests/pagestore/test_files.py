"""The table of files with pages, and the URI records on disk."""

from __future__ import annotations

import pytest

from pagestore.files import (
    CorruptRecordError,
    FileTable,
    decode_record,
    encode_record,
    uri_under,
)

FILE = "f" * 64


@pytest.mark.parametrize("uri", ["s3://b/k", "file:///data/é x.csv", "s3://b/" + "k" * 4000])
def test_a_record_gives_back_its_uri(uri: str) -> None:
    assert decode_record(encode_record(uri)) == uri


@pytest.mark.parametrize("cut", [0, 5, 12, 13, -1])
def test_a_torn_record_is_refused(cut: int) -> None:
    with pytest.raises(CorruptRecordError):
        decode_record(encode_record("s3://bucket/a/b")[:cut])


def test_an_altered_record_is_refused() -> None:
    record = bytearray(encode_record("s3://bucket/a/b"))
    record[-1] ^= 1
    with pytest.raises(CorruptRecordError):
        decode_record(bytes(record))


@pytest.mark.parametrize(
    ("uri", "prefix", "under"),
    [
        ("s3://b/a", "s3://b/a", True),
        ("s3://b/a/x", "s3://b/a", True),
        ("s3://b/a/x", "s3://b/a/", True),
        ("s3://b/ab", "s3://b/a", False),
        ("s3://b/a", "s3://b/a/", False),
        ("s3://b/a", "s3://b/a/x", False),
    ],
)
def test_a_prefix_holds_uris_on_segment_boundaries(uri: str, prefix: str, under: bool) -> None:
    assert uri_under(uri, prefix) is under


def test_writers_write_the_record_until_it_is_written_and_the_last_release_removes_it() -> None:
    table = FileTable()
    assert table.acquire(FILE, "s3://b/k") is True
    assert table.acquire(FILE, "s3://b/k") is True  # not written yet: this writer writes it too
    table.written(FILE)
    assert table.acquire(FILE, "s3://b/k") is False
    assert table.under("s3://b") == [FILE]
    assert [table.release(FILE) for _ in range(3)] == [False, False, True]
    assert table.under("s3://b") == []
    assert table.removed(FILE) is None  # nobody came meanwhile: forgotten
    assert table.acquire(FILE, "s3://b/k") is True


def test_a_writer_during_a_removal_is_not_held_up_and_the_record_is_rewritten() -> None:
    table = FileTable()
    table.acquire(FILE, "s3://b/k")
    table.written(FILE)
    assert table.release(FILE) is True  # the caller is unlinking the record now
    assert table.acquire(FILE, "s3://b/k") is True  # a new page writes the record itself
    table.written(FILE)
    # The unlink may have removed that writer's record: the remover writes it again.
    assert table.removed(FILE) == "s3://b/k"
    table.written(FILE)
    assert table.acquire(FILE, "s3://b/k") is False
    assert table.under("s3://b/") == [FILE]


def test_a_file_whose_record_was_never_written_leaves_nothing_to_remove() -> None:
    table = FileTable()
    table.acquire(FILE, "s3://b/k")
    assert table.release(FILE) is False
    assert table.under("s3://b") == []
    assert table.release(FILE) is False  # releasing an unknown file is harmless


def test_restored_files_have_their_record() -> None:
    table = FileTable()
    table.adopt(FILE, "s3://b/k", recorded=True)
    table.adopt(FILE, "s3://b/k", recorded=True)
    assert table.acquire(FILE, "s3://b/k") is False
    assert [table.release(FILE) for _ in range(3)] == [False, False, True]
