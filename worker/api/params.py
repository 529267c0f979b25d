"""Query parameters and the Range header, parsed by hand: precise 400s naming the parameter,
and no per-request model validation on the hot paths.

Numbers in a request are read by the one integer parser of every surface
(:mod:`worker.api.numbers`): ASCII digits and nothing else, bounded, a 400 naming the parameter.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from starlette.datastructures import QueryParams
from starlette.requests import Request

from config.units import parse_duration
from worker.api import numbers
from worker.errors import InvalidRequest, RangeNotSatisfiable
from worker.ranges import ByteRange

_DURATION = re.compile(r"-1|[0-9]+(?:\.[0-9]+)?[a-z]*")
_RANGE_SPEC = re.compile(r"([0-9]*)-([0-9]*)")
_TRUE, _FALSE = {"true", "1", "yes"}, {"false", "0", "no", ""}


def required(params: QueryParams, name: str) -> str:
    """A parameter that must be given and not empty."""
    value = params.get(name)
    if not value:
        raise InvalidRequest(f"missing query parameter {name!r}")
    return value


def optional_int(params: QueryParams, name: str) -> int | None:
    """A non-negative integer parameter; absent or empty: None. A negative one is a range the
    file cannot satisfy (416), anything else not an integer is a bad request (400)."""
    value = integer(params, name)
    return nonnegative(name, value if isinstance(value, int) else None)


def optional_integer(text: object) -> object:
    """A query value as a bounded integer in ASCII digits (a leading ``-`` allowed), None
    for an empty one; ValueError for anything else that is text. A validator of declared
    parameters too (``worker.api.contract``)."""
    if text is None or text == "":
        return None
    if isinstance(text, str):
        return numbers.signed(text)
    return text


def nonnegative(name: str, value: int | None) -> int | None:
    """``value`` of parameter ``name``; a negative one is RangeNotSatisfiable (416)."""
    if value is not None and value < 0:
        raise RangeNotSatisfiable(f"query parameter {name}={value}: must not be negative")
    return value


def boolean(params: QueryParams, name: str) -> bool:
    text = params.get(name, "")
    try:
        return bool(truth(text))
    except ValueError as exc:
        raise InvalidRequest(f"query parameter {name}={text.lower()!r}: {exc}") from None


def truth(text: object) -> object:
    """A query value as a boolean: true/1/yes, false/0/no/empty (any case); ValueError for
    other text. A validator of declared parameters too."""
    if not isinstance(text, str):
        return text
    if text.lower() in _TRUE:
        return True
    if text.lower() in _FALSE:
        return False
    raise ValueError("expected true or false")


def optional_truth(text: object) -> object:
    """:func:`truth`, None for an absent or empty value (the caller sent no choice). A
    validator of declared parameters too."""
    return None if text is None or text == "" else truth(text)


def optional_boolean(query: QueryParams, name: str) -> bool | None:
    """An optional boolean parameter (:func:`optional_truth`); InvalidRequest naming it."""
    text = query.get(name)
    try:
        value = optional_truth(text)
    except ValueError as exc:
        raise InvalidRequest(f"query parameter {name}={numbers.shown(text or '')}: {exc}") from None
    return None if value is None else bool(value)


def sync_interval(params: QueryParams) -> int | None:
    """``sync_interval`` in ms or as a duration (``30s``); -1 never, 0 always; absent: default."""
    return interval(params.get("sync_interval"))


def interval(text: str | None) -> int | None:
    """A ``sync_interval`` value (see :func:`sync_interval`); InvalidRequest if malformed."""
    if text is None or text == "":
        return None
    try:
        if _DURATION.fullmatch(text) is None:
            raise ValueError("expected a duration such as 0, 500ms, 30s or 1h, or -1 for never")
        return parse_duration(text, allow_never=True)
    except ValueError as exc:
        shown = numbers.shown(text)
        raise InvalidRequest(f"query parameter sync_interval={shown}: {exc}") from None


def byte_range(header: str) -> ByteRange | None:
    """The one range of a ``Range: bytes=...`` header, or None when the header must be ignored
    and the whole file served (RFC 9110 §14.2): a unit other than bytes, or several ranges
    (this worker sends no multipart answers). A malformed bytes range is RangeNotSatisfiable."""
    unit, sep, ranges = header.strip().partition("=")
    if not sep or unit.lower() != "bytes" or "," in ranges:
        return None
    match = _RANGE_SPEC.fullmatch(ranges.strip())
    if match is None or match.group(0) == "-":
        raise RangeNotSatisfiable(
            f"malformed Range header {numbers.shown(header)}; expected bytes=first-last"
        )
    first, last = (range_position(header, match.group(i)) for i in (1, 2))
    if first is None:
        return ByteRange(None, last)
    if last is not None and last < first:
        raise RangeNotSatisfiable(f"Range header {header!r}: last byte before first")
    return ByteRange(first, last)


def range_position(header: str, text: str) -> int | None:
    """A byte position of a Range header (None when left out); InvalidRequest naming the
    header when it is not a bounded integer."""
    if not text:
        return None
    try:
        return numbers.natural(text)
    except ValueError as exc:
        raise InvalidRequest(f"header Range={numbers.shown(header)}: {exc}") from None


# -- lean routes ----------------------------------------------------------------------------------

QueryReader = Callable[[QueryParams, str], object]


def text(query: QueryParams, name: str) -> str | None:
    """An optional text parameter as given (``""`` when empty), None when absent."""
    return query.get(name)


def integer(query: QueryParams, name: str) -> object:
    """An optional integer parameter (:func:`optional_integer`); InvalidRequest naming it."""
    given = query.get(name)
    try:
        return optional_integer(given)
    except ValueError as exc:
        raise InvalidRequest(
            f"query parameter {name}={numbers.shown(given or '')}: {exc}"
        ) from None


@dataclass(frozen=True)
class Lean:
    """A route's declared parameters parsed by hand, for a hot route served without FastAPI's
    per-request dependency solving and validation (``worker.api.app``): ``query`` maps each
    query parameter to its reader, ``headers`` each header to the handler's parameter. The
    readers raise what the declared rules answer (400 naming the parameter), and
    ``tests/worker/api/test_contract.py`` checks the names against the document.

    Immutable, so safe for concurrent requests."""

    query: Mapping[str, QueryReader] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)
    request: bool = False
    """Pass the ``Request`` itself (a handler that reads its own parameters)."""

    def __call__(self, request: Request) -> dict[str, object]:
        given = request.query_params
        kwargs = {name: read(given, name) for name, read in self.query.items()}
        for header, name in self.headers.items():
            kwargs[name] = request.headers.get(header)
        if self.request:
            kwargs["request"] = request
        return kwargs

    @property
    def names(self) -> frozenset[str]:
        """The query parameters and headers it reads."""
        return frozenset(self.query) | frozenset(self.headers)
