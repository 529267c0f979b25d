"""The one query parser: the same rules on every surface, each in its protocol's words, and what
REST v1 and WebHDFS answer through it for an offset or length."""

import json
from pathlib import Path

import httpx
import pytest
from starlette.datastructures import QueryParams

from tests.worker.conftest import Api
from worker.api.numbers import MAX_INTEGER
from worker.api.params import REST, Query, byte_range
from worker.api.webhdfs_errors import DIALECT as WEBHDFS
from worker.common.errors import InvalidRequest, RangeNotSatisfiable


@pytest.mark.parametrize("dialect", [REST, WEBHDFS])
def test_every_surface_takes_the_same_values(dialect: object) -> None:
    query = Query(QueryParams("offset=12&data=yes&recursive=0&sync_interval=30s&e="), dialect)  # type: ignore[arg-type]
    assert query.natural("offset", 0) == 12
    assert (query.boolean("data"), query.boolean("recursive")) == (True, False)
    assert query.sync_interval() == 30_000
    assert (query.text("e"), query.optional_natural("length"), query.boolean("x", True)) == (
        None,
        None,
        True,
    )


@pytest.mark.parametrize(
    ("given", "read"),
    [
        ("data=maybe", lambda q: q.boolean("data")),
        ("sync_interval=5%20s", lambda q: q.sync_interval()),
    ],
)
def test_every_surface_refuses_the_same_values_in_its_own_words(given: str, read: object) -> None:
    name = given.partition("=")[0]
    with pytest.raises(InvalidRequest) as rest:
        read(Query(QueryParams(given), REST))  # type: ignore[operator]
    with pytest.raises(InvalidRequest) as webhdfs:
        read(Query(QueryParams(given), WEBHDFS))  # type: ignore[operator]
    assert str(rest.value).startswith(f"query parameter {name}=")
    assert str(webhdfs.value).startswith(f'Invalid value for webhdfs parameter "{name}"')
    assert str(rest.value).rpartition(": ")[2] == str(webhdfs.value).rpartition(": ")[2]


@pytest.mark.parametrize("given", ["offset=%D9%A3", "offset=1.5", "offset=%2B1", "offset=--1"])
def test_an_offset_that_is_no_integer_is_refused_by_every_surface(given: str) -> None:
    for dialect in (REST, WEBHDFS):
        with pytest.raises(InvalidRequest, match="offset"):
            Query(QueryParams(given), dialect).natural("offset", 0)


def test_a_negative_offset_is_a_range_to_rest_and_no_offset_to_webhdfs() -> None:
    given = QueryParams("offset=-1")
    with pytest.raises(RangeNotSatisfiable, match="^query parameter offset=-1: must not be"):
        Query(given, REST).natural("offset", 0)
    with pytest.raises(InvalidRequest, match='^Invalid value for webhdfs parameter "offset"'):
        Query(given, WEBHDFS).optional_natural("offset")


def test_webhdfs_names_match_in_any_case_and_rest_names_exactly() -> None:
    given = QueryParams("OP=LISTSTATUS&Offset=3")
    assert Query(given, WEBHDFS).required("op") == "LISTSTATUS"
    assert Query(given, WEBHDFS).natural("offset", 0) == 3
    with pytest.raises(InvalidRequest, match="missing query parameter 'op'"):
        Query(given, REST).required("op")
    with pytest.raises(InvalidRequest, match='Missing webhdfs parameter "op"'):
        Query(QueryParams(""), WEBHDFS).required("op")


TEN = b"0123456789"
BIG = str(MAX_INTEGER + 1)


@pytest.mark.parametrize(
    ("given", "rest", "webhdfs"),
    [
        # Malformed, too large for a long, or not digits: 400 on both, naming the parameter.
        ("offset=ten", (400, "offset='ten': expected an integer"), (400, "\"offset\": 'ten'")),
        ("length=1e3", (400, "length='1e3': expected an integer"), (400, "\"length\": '1e3'")),
        (f"offset={BIG}", (400, f"offset='{BIG}'"), (400, f"\"offset\": '{BIG}'")),
        (f"length=-{BIG}", (400, f"length='-{BIG}'"), (400, f"\"length\": '-{BIG}'")),
        # Negative: to REST an integer naming a range no file has (416); to WebHDFS, as to
        # Hadoop's OffsetParam and LengthParam, not a value the parameter takes (400).
        ("offset=-1", (416, "offset=-1: must not be negative"), (400, "\"offset\": '-1'")),
        ("length=-1", (416, "length=-1: must not be negative"), (400, "\"length\": '-1'")),
        # Past the end of the file: 416 on both, saying its size.
        ("offset=11", (416, "past the end of the file (10 bytes)"), (416, "(10 bytes)")),
        (f"offset={MAX_INTEGER}", (416, "(10 bytes)"), (416, "(10 bytes)")),
        # At its very end: REST has nothing there to answer; WebHDFS lets a client open there.
        ("offset=10", (416, "(10 bytes)"), (200, b"")),
        # Nothing asked for: nothing answered, on both.
        ("length=0", (200, b""), (200, b"")),
        ("offset=10&length=0", (200, b""), (200, b"")),
        ("offset=3&length=4", (200, b"3456"), (200, b"3456")),
    ],
)
def test_offset_and_length_on_both_surfaces(
    api: Api, data_dir: Path, given: str, rest: tuple[int, object], webhdfs: tuple[int, object]
) -> None:
    (data_dir / "ten").write_bytes(TEN)
    by_rest = api.get(f"/v1/read?path=file://{data_dir}/ten&{given}")
    by_webhdfs = api.get(f"/webhdfs/v1/file{data_dir}/ten?op=OPEN&data=true&{given}")
    _check(by_rest, rest, {400: "BadRequest", 416: "RangeNotSatisfiable"})
    _check(by_webhdfs, webhdfs, {400: "IllegalArgumentException", 416: "EOFException"})
    for answer in (by_rest, by_webhdfs):
        if answer.status_code == 416 and "bytes)" in answer.text:  # past the end, size known
            assert answer.headers["content-range"] == "bytes */10"


def _check(answer: httpx.Response, expected: tuple[int, object], kinds: dict[int, str]) -> None:
    """``answer`` is ``expected``: a status and its body, or a status and a part of its error
    message, one line with no traceback, of the error kind ``kinds`` gives the status."""
    status, said = expected
    assert answer.status_code == status
    if status == 200:
        assert answer.content == said
        return
    error = json.loads(answer.content)
    error = error.get("RemoteException", error)
    kind, message = error.get("exception", error.get("error")), error["message"]
    assert kind == kinds[status]
    assert isinstance(said, str) and said in message
    assert "\n" not in message and "Traceback" not in message


def test_a_range_position_past_a_long_is_refused_naming_the_header() -> None:
    header = f"bytes={BIG}-"
    with pytest.raises(InvalidRequest, match=f"^header Range='{header}': expected a whole"):
        byte_range(header)


@pytest.mark.parametrize(
    ("given", "status", "said"),
    [
        ("offset=-1", 416, "query parameter offset=-1: must not be negative"),
        ("length=-1", 416, "query parameter length=-1: must not be negative"),
        ("offset=ten", 400, "query parameter offset='ten': expected an integer"),
        (f"length={BIG}", 400, f"query parameter length='{BIG}': expected an integer"),
        ("offset=11", 416, "past the end of the file (10 bytes)"),
        ("offset=3&length=0", 200, None),
    ],
)
def test_locate_reads_offset_and_length_as_a_read_does(
    api: Api, data_dir: Path, given: str, status: int, said: str | None
) -> None:
    (data_dir / "ten").write_bytes(TEN)
    answer = api.get(f"/v1/locate?path=file://{data_dir}/ten&{given}")
    assert answer.status_code == status
    if said is None:
        assert answer.json()["missing"] == []  # a 0-byte window has no pages to miss
    else:
        assert said in answer.json()["message"]
