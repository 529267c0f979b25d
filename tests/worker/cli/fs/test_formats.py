"""Sizes and ``ls`` lines as ``dora fs`` shows them."""

import pytest

from worker.cli.fs.formats import long_line, size_text


@pytest.mark.parametrize(
    ("size", "text"),
    [
        (0, "0 B"),
        (1023, "1023 B"),
        (1024, "1.0 KiB"),
        (1536, "1.5 KiB"),
        (3 << 30, "3.0 GiB"),
        (2**70, "1024.0 EiB"),
    ],
)
def test_human_sizes_use_binary_units(size: int, text: str) -> None:
    assert size_text(size, True) == text
    assert size_text(size, False) == str(size)


def test_a_long_line_shows_kind_size_share_cached_time_and_name() -> None:
    info = {"name": "s3://b/k", "type": "file", "size": 2048, "cached_bytes": 1024,
            "mtime_ns": 0}  # fmt: skip
    assert long_line(info, True).split() == ["-", "2.0", "KiB", "50%", "s3://b/k"]
    folder = {"name": "s3://b/d", "type": "directory", "size": 0, "cached_bytes": 0,
              "mtime_ns": 0}  # fmt: skip
    assert long_line(folder, False).split() == ["d", "-", "s3://b/d"]


def test_a_long_line_says_pinned_for_a_pinned_file() -> None:
    info = {"name": "s3://b/k", "type": "file", "size": 2048, "cached_bytes": 2048,
            "mtime_ns": 0, "pinned": True}  # fmt: skip
    assert long_line(info, True).split() == ["-", "2.0", "KiB", "100%", "pinned", "s3://b/k"]
    assert len(long_line(info, True)) == len(long_line({**info, "pinned": False}, True))
