"""The one query parser: the same rules on every surface, each in its protocol's words."""

import pytest
from starlette.datastructures import QueryParams

from worker.api.params import REST, Query
from worker.api.webhdfs_errors import DIALECT as WEBHDFS
from worker.errors import InvalidRequest


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
        ("offset=%D9%A3", lambda q: q.natural("offset", 0)),
        ("offset=-1", lambda q: q.natural("offset", 0)),
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


def test_webhdfs_names_match_in_any_case_and_rest_names_exactly() -> None:
    given = QueryParams("OP=LISTSTATUS&Offset=3")
    assert Query(given, WEBHDFS).required("op") == "LISTSTATUS"
    assert Query(given, WEBHDFS).natural("offset", 0) == 3
    with pytest.raises(InvalidRequest, match="missing query parameter 'op'"):
        Query(given, REST).required("op")
    with pytest.raises(InvalidRequest, match='Missing webhdfs parameter "op"'):
        Query(QueryParams(""), WEBHDFS).required("op")
