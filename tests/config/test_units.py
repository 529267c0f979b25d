import pytest

from config.units import format_duration, format_size, parse_duration, parse_size


@pytest.mark.parametrize(
    ("text", "ms"),
    [("500ms", 500), ("30s", 30_000), ("10min", 600_000), ("1h", 3_600_000), ("2d", 172_800_000),
     ("250", 250), (" 1.5s ", 1500), ("0", 0), ("3H", 10_800_000)],
)  # fmt: skip
def test_parse_duration(text: str, ms: int) -> None:
    assert parse_duration(text) == ms


def test_never_only_where_allowed() -> None:
    assert parse_duration("-1", allow_never=True) == -1
    with pytest.raises(ValueError, match="duration such as"):
        parse_duration("-1")
    with pytest.raises(ValueError, match="or -1"):
        parse_duration("-5", allow_never=True)


@pytest.mark.parametrize("text", ["", "soon", "10 parsecs", "1.5", "1e3s", "s", "٣s", "٣"])
def test_bad_durations_name_the_form(text: str) -> None:
    with pytest.raises(ValueError, match="500ms, 30s, 10min, 1h or 2d"):
        parse_duration(text)


@pytest.mark.parametrize(
    ("text", "size"),
    [("64KB", 65536), ("1MB", 1 << 20), ("1GB", 1 << 30), ("2TB", 2 << 40), ("512B", 512),
     ("4096", 4096), ("1.5KB", 1536), ("8mb", 8 << 20)],
)  # fmt: skip
def test_parse_size(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["lots", "1XB", "-1MB", "1.5", "", "٣MB"])
def test_bad_sizes_name_the_form(text: str) -> None:
    with pytest.raises(ValueError, match="64KB, 1MB, 1GB"):
        parse_size(text)


def test_formatting_round_trips() -> None:
    for ms in (1, 999, 1000, 61_000, 3_600_000, 86_400_000, -1):
        assert parse_duration(format_duration(ms), allow_never=True) == ms
    for size in (1, 1023, 1024, 1 << 20, 3 << 30, 5 << 40):
        assert parse_size(format_size(size)) == size
    assert format_size(4 << 20) == "4MB"
    assert format_duration(30_000) == "30s"
