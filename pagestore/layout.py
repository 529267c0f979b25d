"""The names the page store gives to what it creates inside a page directory, and nothing else.

Everything the store ever removes is recognised here first: a name that does not match is
somebody else's file and is left alone, wherever it is found.

- ``<root>/<page_size>/``: a layout (all pages written with one page size);
- ``<layout>/<bucket>/``: a bucket, the first one or two characters of the file ids in it;
- ``<bucket>/<file_id>.<version_key>.<index>``: a page (see :class:`~pagestore.page.PageKey`);
- ``<name>.<pid>-<n>.tmp``: a temporary file, renamed to ``<name>`` once complete.
"""

from __future__ import annotations

import enum
import re

from pagestore.page import PageKey

TEMP_SUFFIX = ".tmp"
_LAYOUT = re.compile(r"^[0-9]{1,19}$")
_BUCKET = re.compile(r"^[A-Za-z0-9_-]{1,2}$")
_TEMP = re.compile(r"^(.+)\.[0-9]{1,10}-[0-9]{1,19}\.tmp$")


class Kind(enum.Enum):
    """What a file name in a bucket stands for."""

    PAGE = "page"
    TEMP = "temp"
    FOREIGN = "foreign"
    """Not a name the store gives: never removed."""


def layout_name(page_size: int) -> str:
    return str(page_size)


def is_layout(name: str) -> bool:
    """Whether ``name`` is the name of a layout directory (of any page size)."""
    return _LAYOUT.match(name) is not None


def is_bucket(name: str) -> bool:
    return _BUCKET.match(name) is not None


def bucket_of(file_id: str) -> str:
    return file_id[:2]


def temp_name(name: str, pid: int, n: int) -> str:
    return f"{name}.{pid}-{n}{TEMP_SUFFIX}"


def classify(bucket: str, name: str) -> Kind:
    """What the file ``name`` found in ``bucket`` is. A page is a page only in its own bucket;
    a temporary file only if it is one of a page's."""
    temp = _TEMP.match(name)
    if temp is not None:
        return Kind.TEMP if _is_page(bucket, temp.group(1)) else Kind.FOREIGN
    return Kind.PAGE if _is_page(bucket, name) else Kind.FOREIGN


def _is_page(bucket: str, name: str) -> bool:
    key = PageKey.parse(name)
    return key is not None and bucket_of(key.file_id) == bucket
