"""A read's result filled in place: the same bytes whichever way it is built, a real ``bytes``
object, and storage that outlives the builder while a view of it is held."""

import gc
import os

import pytest

from worker.client.outbytes import IN_PLACE_MIN, OutBytes


@pytest.mark.parametrize("size", [0, 1, 100, IN_PLACE_MIN - 1, IN_PLACE_MIN, 3 * IN_PLACE_MIN + 5])
def test_slices_filled_apart_are_taken_as_one_bytes_object(size: int) -> None:
    data = os.urandom(size)
    out = OutBytes(size)
    half = size // 2
    out.view[half:] = data[half:]
    out.view[:half] = data[:half]
    taken = out.take()
    assert type(taken) is bytes and taken == data
    with pytest.raises(ValueError, match="taken already"):
        out.take()


def test_a_view_kept_after_the_builder_is_gone_writes_into_live_storage() -> None:
    out = OutBytes(IN_PLACE_MIN)
    piece = out.view[10:20]
    del out
    gc.collect()
    piece[:] = b"0123456789"  # a late writer (a thread the reader gave up on) harms nobody
    assert bytes(piece) == b"0123456789"


def test_a_negative_size_is_refused() -> None:
    with pytest.raises(ValueError, match="negative size -1"):
        OutBytes(-1)
