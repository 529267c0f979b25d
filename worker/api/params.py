"""The one parser of query parameters and the Range header, for every surface, by hand:
precise 400s naming the parameter, and no per-request model validation on the hot paths.

The rules of what a value may be are the same on every surface: numbers by the one integer
parser (:mod:`worker.api.numbers`: ASCII digits and nothing else, bounded), booleans by
:func:`truth`, sync intervals by :func:`interval`. A surface's :class:`Dialect` says only how
its protocol matches names (WebHDFS: in any case, as the NameNode) and words a refusal
(:data:`REST`; WebHDFS's in ``worker.api.webhdfs_errors``). :class:`Query` reads one request
by them.
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


@dataclass(frozen=True)
class Dialect:
    """How a surface's protocol names its parameters and words a refusal; what a value may be
    is the same on every surface. ``fold_case``: names match in any case. ``missing(name)``
    and ``invalid(name, shown value, what was expected)`` are the messages of the 400s."""

    fold_case: bool
    missing: Callable[[str], str]
    invalid: Callable[[str, str, str], str]


REST = Dialect(
    fold_case=False,
    missing=lambda name: f"missing query parameter {name!r}",
    invalid=lambda name, shown, expected: f"query parameter {name}={shown}: {expected}",
)
"""REST v1's and the Alluxio routes' wording."""


class Query:
    """One request's query parameters, read by the shared rules in ``dialect``'s wording. An
    empty value is an absent one. Not shared between requests."""

    def __init__(self, params: QueryParams, dialect: Dialect = REST) -> None:
        self.dialect = dialect
        self._values: Mapping[str, str] = (
            {name.lower(): value for name, value in params.multi_items()}
            if dialect.fold_case
            else params
        )

    def text(self, name: str) -> str | None:
        value = self._values.get(name)
        return value if value else None

    def required(self, name: str) -> str:
        """A parameter that must be given and not empty."""
        value = self.text(name)
        if value is None:
            raise InvalidRequest(self.dialect.missing(name))
        return value

    def invalid(self, name: str, text: str, expected: object) -> InvalidRequest:
        """The refusal of ``text`` as parameter ``name``, saying what was ``expected``."""
        return InvalidRequest(self.dialect.invalid(name, numbers.shown(text), str(expected)))

    def natural(self, name: str, default: int) -> int:
        """A non-negative integer parameter (an offset, a length); absent: ``default``."""
        text = self.text(name)
        if text is None:
            return default
        try:
            return numbers.natural(text)
        except ValueError as exc:
            raise self.invalid(name, text, exc) from None

    def optional_natural(self, name: str) -> int | None:
        """:meth:`natural`, None when not given (a length: to the end)."""
        return None if self.text(name) is None else self.natural(name, 0)

    def boolean(self, name: str, default: bool = False) -> bool:
        """A boolean parameter (:func:`truth`); absent: ``default``."""
        text = self.text(name)
        if text is None:
            return default
        try:
            return bool(truth(text))
        except ValueError as exc:
            raise self.invalid(name, text, exc) from None

    def optional_boolean(self, name: str) -> bool | None:
        """A boolean parameter (:func:`truth`), None when absent (the caller sent no choice)."""
        return None if self.text(name) is None else self.boolean(name)

    def sync_interval(self) -> int | None:
        """``sync_interval`` (:func:`duration`), None when absent: the path's applies."""
        text = self.text("sync_interval")
        if text is None:
            return None
        try:
            return duration(text)
        except ValueError as exc:
            raise self.invalid("sync_interval", text, exc) from None


def required(params: QueryParams, name: str) -> str:
    """A parameter that must be given and not empty."""
    return Query(params).required(name)


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
    """A boolean parameter (:func:`truth`); absent: False."""
    return Query(params).boolean(name)


def optional_boolean(params: QueryParams, name: str) -> bool | None:
    """A boolean parameter (:func:`truth`); absent: None (the caller sent no choice)."""
    return Query(params).optional_boolean(name)


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
    validator of declared parameters too (``worker.api.contract``)."""
    return None if text is None or text == "" else truth(text)


def interval(text: str | None) -> int | None:
    """A ``sync_interval`` value in ms or as a duration (``30s``); -1 never, 0 always; absent
    or empty: None (the path's). InvalidRequest if malformed."""
    if not text:
        return None
    try:
        return duration(text)
    except ValueError as exc:
        refusal = REST.invalid("sync_interval", numbers.shown(text), str(exc))
        raise InvalidRequest(refusal) from None


def duration(text: str) -> int:
    """A sync interval's text as ms; ValueError saying what was expected."""
    if _DURATION.fullmatch(text) is None:
        raise ValueError("expected a duration such as 0, 500ms, 30s or 1h, or -1 for never")
    return parse_duration(text, allow_never=True)


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
    """Pass the ``Request`` itself too: a handler that reads its own parameters, or builds
    the call's context from it (``worker.api.surface.context``)."""

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
