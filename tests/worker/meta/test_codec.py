"""The metastore's value encoding: round trips, size, and corrupt input."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ufs.status import UfsStatus, make_version
from worker.meta import codec
from worker.meta.entry import MetaEntry, Operation
from worker.meta.errors import CorruptEntry

URI = "s3://bucket/warehouse/table/part-00000.parquet"


def file_status(etag: str | None = None) -> UfsStatus:
    size, mtime = 123_456_789, 1_700_000_000_123_456_789
    return UfsStatus(
        URI, "part-00000.parquet", False, size, mtime, make_version(size, mtime, etag), etag
    )


def test_a_plain_file_costs_27_bytes_and_round_trips() -> None:
    entry = MetaEntry(file_status(), 1_700_000_000_000, Operation.LOADED)
    data = codec.encode(entry)
    assert len(data) == 27
    assert codec.decode(URI, data) == entry


def test_an_etag_is_stored_once() -> None:
    entry = MetaEntry(file_status('"9b2cf535f27731c974343645a3985328"'), 5, Operation.CREATED)
    data = codec.encode(entry)
    assert len(data) == 27 + 2 + 34
    assert codec.decode(URI, data) == entry


def test_a_negative_entry_costs_11_bytes() -> None:
    entry = MetaEntry(None, 1_700_000_000_000, Operation.DELETED)
    assert len(codec.encode(entry)) == 11
    assert codec.decode(URI, codec.encode(entry)) == entry


statuses = st.builds(
    UfsStatus,
    uri=st.just(URI),
    name=st.text(max_size=40),
    is_dir=st.booleans(),
    size=st.integers(0, 2**63 - 1),
    mtime_ns=st.integers(-(2**63), 2**63 - 1),
    version=st.text(max_size=60),
    content_hash=st.none() | st.text(max_size=60),
)
entries = st.builds(
    MetaEntry,
    status=st.none() | statuses,
    loaded_at=st.integers(0, 2**62),
    op=st.sampled_from(Operation),
)


@given(entries)
def test_every_entry_round_trips(entry: MetaEntry) -> None:
    assert codec.decode(URI, codec.encode(entry)) == entry


@given(entries, st.data())
def test_a_truncated_or_extended_value_is_corrupt_never_wrong(
    entry: MetaEntry, data: st.DataObject
) -> None:
    encoded = codec.encode(entry)
    cut = data.draw(st.integers(0, len(encoded) - 1))
    with pytest.raises(CorruptEntry):
        codec.decode(URI, encoded[:cut])
    with pytest.raises(CorruptEntry):
        codec.decode(URI, encoded + b"\x00")


@pytest.mark.parametrize(
    "garbage",
    [b"", b"\x02" + bytes(10), b"\x01\x09" + bytes(9), b"\x01\x01\x80" + bytes(8), b"\xff" * 40],
)
def test_garbage_is_corrupt(garbage: bytes) -> None:
    with pytest.raises(CorruptEntry):
        codec.decode(URI, garbage)
