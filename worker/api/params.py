"""Query parameters and the Range header, parsed by hand: precise 400s naming the parameter,
and no per-request model validation on the hot paths."""

from __future__ import annotations

import re

from starlette.datastructures import QueryParams

from config.units import parse_duration
from worker.errors import InvalidRequest, RangeNotSatisfiable

_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")
_TRUE, _FALSE = {"true", "1", "yes"}, {"false", "0", "no", ""}


def required(params: QueryParams, name: str) -> str:
    value = params.get(name)
    if not value:
        raise InvalidRequest(f"missing query parameter {name!r}")
    return value


def optional_int(params: QueryParams, name: str) -> int | None:
    text = params.get(name)
    if text is None or text == "":
        return None
    try:
        value = int(text)
    except ValueError:
        raise InvalidRequest(f"query parameter {name}={text!r}: expected an integer") from None
    if value < 0:
        raise RangeNotSatisfiable(f"query parameter {name}={value}: must not be negative")
    return value


def boolean(params: QueryParams, name: str) -> bool:
    text = params.get(name, "").lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise InvalidRequest(f"query parameter {name}={text!r}: expected true or false")


def sync_interval(params: QueryParams) -> int | None:
    """``sync_interval`` in ms or as a duration (``30s``); -1 never, 0 always; absent: default."""
    text = params.get("sync_interval")
    if text is None or text == "":
        return None
    try:
        return parse_duration(text, allow_never=True)
    except ValueError as exc:
        raise InvalidRequest(f"query parameter sync_interval={text!r}: {exc}") from None


def byte_range(header: str) -> tuple[int, int | None, bool]:
    """Parse ``Range: bytes=a-b`` into (offset, length or None, suffix?). A suffix range
    ``bytes=-n`` returns (n, None, True): the last n bytes."""
    match = _RANGE.match(header.strip())
    if match is None:
        raise RangeNotSatisfiable(f"unsupported Range header {header!r}; expected bytes=start-end")
    first, last = match.group(1), match.group(2)
    if not first and not last:
        raise RangeNotSatisfiable(f"empty Range header {header!r}")
    if not first:
        return int(last), None, True
    start = int(first)
    if last:
        end = int(last)
        if end < start:
            raise RangeNotSatisfiable(f"Range {header!r}: end before start")
        return start, end - start + 1, False
    return start, None, False
