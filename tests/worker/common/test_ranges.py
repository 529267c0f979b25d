"""Requested ranges resolved against a file's size: always inside the file, or refused with it."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from worker.common.errors import RangeNotSatisfiable
from worker.common.ranges import ByteRange, Window

sizes = st.integers(0, 10_000)
positions = st.integers(0, 20_000)


@given(sizes, st.one_of(st.none(), positions), st.one_of(st.none(), positions))
def test_a_byte_range_selects_what_slicing_would(
    size: int, first: int | None, last: int | None
) -> None:
    if first is not None and last is not None and last < first:
        return  # malformed: the header parser refuses it before it gets here
    wanted = ByteRange(first, last)
    data = bytes(size)
    if first is None:
        expected = data[-last:] if last else b""
    else:
        expected = data[first : None if last is None else last + 1]
    try:
        offset, length = wanted.resolve(size)
    except RangeNotSatisfiable as exc:
        assert exc.size == size
        assert expected == b""
        return
    assert offset >= 0 and length > 0 and offset + length <= size
    assert len(expected) == length


@pytest.mark.parametrize(
    ("window", "size", "resolved"),
    [
        (Window(), 0, (0, 0)),
        (Window(0, 0), 10, (0, 0)),
        (Window(10, 0), 10, (10, 0)),
        (Window(5, 100), 10, (5, 5)),
        (Window(5), 10, (5, 5)),
    ],
)
def test_windows(window: Window, size: int, resolved: tuple[int, int]) -> None:
    assert window.resolve(size) == resolved


@pytest.mark.parametrize("window", [Window(10), Window(11, 1), Window(-1), Window(0, -1)])
def test_windows_past_the_end(window: Window) -> None:
    with pytest.raises(RangeNotSatisfiable) as info:
        window.resolve(10)
    assert info.value.size == 10
