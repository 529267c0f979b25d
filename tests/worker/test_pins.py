"""The pin table (``worker/pins.py``): what it covers, its bound, and its file."""

import stat
from pathlib import Path

import pytest

from worker.common.errors import PinLimitExceeded
from worker.pins import Pin, PinTable


def test_a_file_pin_covers_the_file_and_a_recursive_one_what_is_under_it(tmp_path: Path) -> None:
    table = PinTable(tmp_path / "pins.json")
    table.add("s3://b/f", False, 10, 100)
    table.add("s3://b/d", True, 20, 100)
    assert table.covers("s3://b/f") and not table.covers("s3://b/f/x")
    assert table.covers("s3://b/d/x/y") and not table.covers("s3://b/dd")


def test_pins_are_saved_private_and_read_back(tmp_path: Path) -> None:
    PinTable(tmp_path / "pins.json").add("s3://b/d", True, 20, 100)
    assert stat.S_IMODE((tmp_path / "pins.json").stat().st_mode) == 0o600
    assert PinTable(tmp_path / "pins.json").entries() == [("s3://b/d", Pin(True, 20))]


def test_a_pin_past_the_limit_is_refused_and_not_kept(tmp_path: Path) -> None:
    table = PinTable(tmp_path / "pins.json")
    table.add("s3://b/a", False, 60, 100)
    with pytest.raises(PinLimitExceeded, match=r"dora\.worker\.page\.store\.pin\.max"):
        table.add("s3://b/b", False, 50, 100)
    assert PinTable(tmp_path / "pins.json").entries() == [("s3://b/a", Pin(False, 60))]


def test_a_recursive_unpin_drops_every_pin_under_it(tmp_path: Path) -> None:
    table = PinTable(tmp_path / "pins.json")
    for uri in ("s3://b/d/x", "s3://b/d/y", "s3://b/e"):
        table.add(uri, False, 1, 100)
    assert sorted(table.remove("s3://b/d", recursive=True)) == ["s3://b/d/x", "s3://b/d/y"]
    assert [uri for uri, _ in table.entries()] == ["s3://b/e"]


def test_an_unreadable_file_starts_with_no_pins(tmp_path: Path) -> None:
    (tmp_path / "pins.json").write_text("{not json")
    assert PinTable(tmp_path / "pins.json").entries() == []
