"""The one parser of query parameters and the Range header, for every surface, by hand:
precise 400s naming the parameter, and no per-request model validation on the hot paths.

The rules of what a value may be are the same on every surface: numbers by the one integer
parser (:mod:`worker.api.numbers`: ASCII digits and nothing else, bounded), booleans by
:func:`truth`, sync intervals by :func:`interval`. A surface's :class:`Dialect` says only how
its protocol matches names (WebHDFS: in any case, as the NameNode), what a negative offset or
length is (REST: a range no file has, 416; WebHDFS: a malformed value, 400) and words a
refusal (:data:`REST`; WebHDFS's in ``worker.api.webhdfs_errors``). :class:`Query` reads one
request by them, on the lean routes too (:class:`Lean`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from starlette.datastructures import QueryParams
from starlette.requests import Request

from config.units import parse_duration
from worker.api import numbers
from worker.common.errors import InvalidRequest, RangeNotSatisfiable
from worker.common.ranges import ByteRange

_DURATION = re.compile(r"-1|[0-9]+(?:\.[0-9]+)?[a-z]*")
_RANGE_SPEC = re.compile(r"([0-9]*)-([0-9]*)")
_TRUE, _FALSE = {"true", "1", "yes"}, {"false", "0", "no", ""}
T = TypeVar("T")


@dataclass(frozen=True)
class Dialect:
    """How a surface's protocol names its parameters and words a refusal; what a value may be
    is the same on every surface but for the sign of an offset or length (``negative``).
    ``fold_case``: names match in any case. ``missing(name)``
    and ``invalid(name, shown value, what was expected)`` are the messages of the 400s.
    ``negative(name, value)``, when given, is the message of the 416 a negative offset or
    length gets (an integer, naming a range no file has); without it such a value is not a
    number the parameter takes (400)."""

    fold_case: bool
    missing: Callable[[str], str]
    invalid: Callable[[str, str, str], str]
    negative: Callable[[str, int], str] | None = None

    def integer(self, text: str) -> int:
        """``text`` as an offset or length of this protocol (a leading ``-`` only where
        negatives are 416s); ValueError saying what was expected."""
        return numbers.natural(text) if self.negative is None else numbers.signed(text)


REST = Dialect(
    fold_case=False,
    missing=lambda name: f"missing query parameter {name!r}",
    invalid=lambda name, shown, expected: f"query parameter {name}={shown}: {expected}",
    negative=lambda name, value: f"query parameter {name}={value}: must not be negative",
)
"""REST v1's and the Alluxio routes' wording; a negative offset or length is a 416 (DESIGN.md:
"416 bad range")."""


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

    def given(self, name: str) -> str | None:
        """A text parameter as given (``""`` when empty), None when absent: what FastAPI
        passes a declared ``str | None`` parameter, for a handler a lean route calls too."""
        return self._values.get(name)

    def required(self, name: str) -> str:
        """A parameter that must be given and not empty."""
        value = self.text(name)
        if value is None:
            raise InvalidRequest(self.dialect.missing(name))
        return value

    def invalid(self, name: str, text: str, expected: object) -> InvalidRequest:
        """The refusal of ``text`` as parameter ``name``, saying what was ``expected``."""
        return invalid(self.dialect, name, text, expected)

    def optional_natural(self, name: str) -> int | None:
        """A non-negative integer parameter (an offset, a length), None when absent (a length:
        to the end). InvalidRequest if malformed; a negative one by the dialect's rule
        (:class:`Dialect`)."""
        value = parsed(self.dialect, name, self.text(name), self.dialect.integer)
        if value is not None and value < 0 and self.dialect.negative is not None:
            raise RangeNotSatisfiable(self.dialect.negative(name, value))
        return value

    def natural(self, name: str, default: int) -> int:
        """:meth:`optional_natural`, ``default`` when absent."""
        value = self.optional_natural(name)
        return default if value is None else value

    def optional_boolean(self, name: str) -> bool | None:
        """A boolean parameter (:func:`truth`), None when absent (the caller sent no choice)."""
        return parsed(self.dialect, name, self.text(name), lambda text: bool(truth(text)))

    def boolean(self, name: str, default: bool = False) -> bool:
        """A boolean parameter (:func:`truth`); absent: ``default``."""
        value = self.optional_boolean(name)
        return default if value is None else value

    def sync_interval(self) -> int | None:
        """``sync_interval`` (:func:`duration`), None when absent: the path's applies."""
        return parsed(self.dialect, "sync_interval", self.text("sync_interval"), duration)


def parsed(dialect: Dialect, name: str, text: str | None, parse: Callable[[str], T]) -> T | None:
    """``text`` of parameter ``name`` by ``parse``, None when absent or empty; when ``parse``
    raises ValueError, InvalidRequest naming the parameter in ``dialect``'s words."""
    if not text:
        return None
    try:
        return parse(text)
    except ValueError as exc:
        raise invalid(dialect, name, text, exc) from None


def invalid(dialect: Dialect, name: str, text: str, expected: object) -> InvalidRequest:
    """The refusal of ``text`` as parameter ``name`` in ``dialect``'s words, saying what was
    ``expected``."""
    return InvalidRequest(dialect.invalid(name, numbers.shown(text), str(expected)))


def required(params: QueryParams, name: str) -> str:
    """A parameter that must be given and not empty."""
    return Query(params).required(name)


def optional_int(params: QueryParams, name: str) -> int | None:
    """:meth:`Query.optional_natural` in REST's rules: absent or empty, None."""
    return Query(params).optional_natural(name)


def optional_integer(text: object) -> object:
    """A declared offset or length (``worker.api.contract``: FastAPI's document of a lean
    route) by REST's integer rule (:meth:`Dialect.integer`), None for an empty one."""
    if text is None or text == "":
        return None
    return REST.integer(text) if isinstance(text, str) else text


def boolean(params: QueryParams, name: str) -> bool:
    """A boolean parameter (:func:`truth`); absent: False."""
    return Query(params).boolean(name)


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
    return parsed(REST, "sync_interval", text, duration)


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
    return header_number("Range", header, text) if text else None


def header_number(name: str, value: str, text: str) -> int:
    """``text``, a number in header ``name`` whose value is ``value``, as an integer from 0 to
    :data:`numbers.MAX_INTEGER`; InvalidRequest naming the header and showing its value."""
    try:
        return numbers.natural(text)
    except ValueError as exc:
        raise InvalidRequest(f"header {name}={numbers.shown(value)}: {exc}") from None


# -- lean routes ----------------------------------------------------------------------------------

QueryReader = Callable[[Query, str], object]
"""A :class:`Query` method reading one parameter by name: ``Query.required``, ``Query.given``,
``Query.optional_natural``, ``Query.optional_boolean``."""


@dataclass(frozen=True)
class Lean:
    """A route's declared parameters parsed by hand, for a hot route served without FastAPI's
    per-request dependency solving and validation (``worker.api.app``): ``query`` maps each
    query parameter to its reader over the request's one :class:`Query` (REST's rules),
    ``headers`` each header to the handler's parameter. The readers raise what the declared
    rules answer (400 naming the parameter; 416 for a negative offset or length), and
    ``tests/worker/api/test_contract.py`` checks the names against the document.

    Immutable, so safe for concurrent requests."""

    query: Mapping[str, QueryReader] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)
    request: bool = False
    """Pass the ``Request`` itself too: a handler that reads its own parameters, or builds
    the call's context from it (``worker.api.surface.context``)."""

    def __call__(self, request: Request) -> dict[str, object]:
        given = Query(request.query_params)
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
