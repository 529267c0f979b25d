"""Parameters of Alluxio's REST calls as alluxiofs sends them.

alluxiofs formats ``ufsFullPath``, ``srcPath`` and ``dstPath`` into its URLs without encoding
them, so a ``+`` in a path arrives as a literal ``+`` (form decoding would make it a space); the
``{path_id}`` in the URL is the sha256 of the path string it sent, which tells the two readings
apart. Parameters it passes through ``requests``' ``params=`` (``path``, the options) are
form-encoded as usual.
"""

from __future__ import annotations

import re
from urllib.parse import unquote, unquote_plus

from starlette.requests import Request

from config.units import parse_size
from ufs.status import file_id
from worker.api import numbers, params
from worker.common.errors import InvalidRequest as BadRequest
from worker.common.ranges import ByteRange

# alluxiofs 1.1.x asks for "the rest of the file" as bytes=<start>-<start - 2> (it formats
# offset + length - 1 with length -1); any other range goes to the standard parser.
_TO_END = re.compile(r"bytes=([0-9]+)-(-?[0-9]+)")


def target(request: Request, name: str = "ufsFullPath") -> str:
    """The path a call names in query parameter ``name``, checked against the ``{path_id}``
    of its URL. Raises BadRequest when it is missing or its sha256 is not the path id."""
    path_id = request.path_params["path_id"].lower()
    raw = _raw_query_value(request, name)
    for reading in (unquote(raw, errors="strict"), unquote_plus(raw, errors="strict")):
        if file_id(reading) == path_id:
            return reading
    raise BadRequest(
        f"path id {path_id!r} is not the sha256 of {name}={unquote(raw)!r} "
        "(alluxiofs computes it as sha256 of the full UFS path)"
    )


def unchecked_path(request: Request, name: str) -> str:
    """A path in query parameter ``name`` that no path id covers (``dstPath``), read as
    alluxiofs sends it."""
    return unquote(_raw_query_value(request, name), errors="strict")


def _raw_query_value(request: Request, name: str) -> str:
    """The still percent-encoded value of ``name``; BadRequest when missing, empty or not
    UTF-8."""
    try:
        raw: bytes = request.scope["query_string"]
        query = raw.decode("utf-8")
        for part in query.split("&"):
            key, _, value = part.partition("=")
            if unquote_plus(key) == name and value:
                unquote(value, errors="strict")
                return value
    except UnicodeDecodeError:
        raise BadRequest(f"query parameter {name!r} is not UTF-8") from None
    raise BadRequest(f"missing query parameter {name!r}")


def page_index(request: Request) -> int:
    text = request.path_params["page_index"]
    try:
        return numbers.natural(text)
    except ValueError as exc:
        raise BadRequest(f"page index {numbers.shown(text)}: {exc}") from None


def byte_count(request: Request, name: str, default: int) -> int:
    """A byte count such as ``1024`` or ``1KB`` (alluxiofs documents both) in ``name``."""
    text = request.query_params.get(name)
    if text is None or text == "":
        return default
    try:
        return parse_size(text)
    except ValueError as exc:
        raise BadRequest(f"query parameter {name}={numbers.shown(text)}: {exc}") from None


def flag(request: Request, *names: str) -> bool:
    """Whether any of the boolean options ``names`` is true (alluxiofs sends ``True``)."""
    return any(params.boolean(request.query_params, name) for name in names)


def object_range(header: str) -> ByteRange | None:
    """A Range header of an S3-style read; None when it must be ignored (the whole file). To
    read to the end alluxiofs 1.1.x sends ``bytes=a-(a-2)``, which means bytes from ``a``."""
    match = _TO_END.fullmatch(header.strip())
    if match is not None:
        first = params.range_position(header, match.group(1)) or 0
        if match.group(2) == str(first - 2):
            return ByteRange(first, None)
    return params.byte_range(header)
