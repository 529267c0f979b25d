"""The names the page store gives to what it creates inside a page directory, and nothing else.

Everything the store ever removes is recognised here first: a name that does not match is
somebody else's file and is left alone, wherever it is found.

- ``<root>/v3-<page_size>/``: a layout (all pages of one page size, in page file format 3);
  earlier versions wrote format 2 under ``<root>/v2-<page_size>/`` and format 1 under
  ``<root>/<page_size>/``, removed like any other layout the store no longer reads;
- ``<layout>/<bucket>/``: a bucket, the first one or two characters of the file ids in it;
- ``<bucket>/<file_id>.<version_key>.<index>``: a page (see :class:`~pagestore.page.PageKey`);
- ``<bucket>/uri.<file_id>``: the record of the URI of the file whose pages are in the bucket;
- ``<layout>/packs/<n>.pack``: a pack of small pages of any files (:mod:`pagestore.pack`);
- ``<name>.<pid>-<n>.tmp``: a temporary file, renamed to ``<name>`` once complete;
- ``<root>/generations``: not the store's but its worker's (the near-cache's counters, in the
  first page directory); the store never removes it, and it makes a directory no less its own.
"""

from __future__ import annotations

import enum
import re

from pagestore.page import PageKey
from pagestore.pagefile import FORMAT

TEMP_SUFFIX = ".tmp"
_LAYOUT = re.compile(r"^(?:v[0-9]{1,3}-)?[0-9]{1,19}$")
_BUCKET = re.compile(r"^[A-Za-z0-9_-]{1,2}$")
_TEMP = re.compile(r"^(.+)\.[0-9]{1,10}-[0-9]{1,19}\.tmp$")
_RECORD = re.compile(r"^uri\.([A-Za-z0-9_-]{1,128})$")
_PACK = re.compile(r"^([0-9]{1,19})\.pack$")
PACKS = "packs"
GENERATIONS = "generations"


class Kind(enum.Enum):
    """What a file name in a bucket stands for."""

    PAGE = "page"
    RECORD = "record"
    TEMP = "temp"
    FOREIGN = "foreign"
    """Not a name the store gives: never removed."""


def layout_name(page_size: int) -> str:
    return f"v{FORMAT}-{page_size}"


def is_layout(name: str) -> bool:
    """Whether ``name`` is the name of a layout directory (of any page size)."""
    return _LAYOUT.match(name) is not None


def is_bucket(name: str) -> bool:
    return _BUCKET.match(name) is not None


def bucket_of(file_id: str) -> str:
    return file_id[:2]


def record_name(file_id: str) -> str:
    return f"uri.{file_id}"


def record_of(name: str) -> str | None:
    """The file id whose record ``name`` is, or None if it is not a record's name."""
    match = _RECORD.match(name)
    return None if match is None else match.group(1)


def pack_name(number: int) -> str:
    return f"{number}.pack"


def pack_of(name: str) -> int | None:
    """The number of the pack ``name`` names, or None if it is not a pack's name."""
    match = _PACK.match(name)
    return None if match is None else int(match.group(1))


def temp_name(name: str, pid: int, n: int) -> str:
    return f"{name}.{pid}-{n}{TEMP_SUFFIX}"


def classify(bucket: str, name: str) -> Kind:
    """What the file ``name`` found in ``bucket`` is. Pages and records count only in their own
    bucket, and a temporary file only if it is one of theirs."""
    temp = _TEMP.match(name)
    if temp is not None:
        return Kind.TEMP if _own_kind(bucket, temp.group(1)) is not None else Kind.FOREIGN
    return _own_kind(bucket, name) or Kind.FOREIGN


def _own_kind(bucket: str, name: str) -> Kind | None:
    key = PageKey.parse(name)
    if key is not None:
        return Kind.PAGE if bucket_of(key.file_id) == bucket else None
    file_id = record_of(name)
    if file_id is not None:
        return Kind.RECORD if bucket_of(file_id) == bucket else None
    return None
