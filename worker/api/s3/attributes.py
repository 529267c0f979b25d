"""Objects' attributes on the S3 endpoint (``ufs.attributes``: ``Content-Type``, the other kept
headers, ``x-amz-meta-*``): taken from a write's request, and shown on HeadObject and
GetObject as the store keeps them.

The store answers them only to a HEAD, which a read served from the cache would otherwise not
make: :class:`AttributeMemo` keeps the last ones seen for each object, with the version and
modification time they were read at, so a warm read asks the store nothing. A write through
the endpoint forgets its object's (a copy onto itself that changes only the metadata keeps
the ETag, and within one second the modification time too); a change from elsewhere is seen
by its new ETag or time."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping

from ufs.attributes import Attributes
from ufs.status import UfsStatus

MEMO_ENTRIES = 10_000
"""Versions whose attributes are kept: a few hundred bytes each."""
CHUNKED = "aws-chunked"
"""A ``Content-Encoding`` that describes the request's framing, not the object's bytes."""


def requested(headers: Mapping[str, str]) -> Attributes:
    """The attributes a PutObject, a CopyObject with ``REPLACE`` or a CreateMultipartUpload
    asks the object to be stored with (``aws-chunked`` dropped from its ``Content-Encoding``)."""
    asked = Attributes.from_headers(headers)
    encoding = asked.headers.get("Content-Encoding")
    if encoding is None:
        return asked
    codings = [c.strip() for c in encoding.split(",") if c.strip().lower() != CHUNKED]
    kept = {name: value for name, value in asked.headers.items() if name != "Content-Encoding"}
    if codings:
        kept["Content-Encoding"] = ", ".join(codings)
    return Attributes(kept, asked.user)


class AttributeMemo:
    """The attributes of the last :data:`MEMO_ENTRIES` objects looked up, each with the version
    and modification time it was read at, least recently used first out. Thread-safe (one lock
    around the map; the store is asked outside it, so two first reads may both ask)."""

    def __init__(self, entries: int = MEMO_ENTRIES) -> None:
        self._entries = entries
        self._kept: OrderedDict[str, tuple[str, int, Attributes]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, status: UfsStatus, load: Callable[[], Attributes]) -> Attributes:
        """The attributes of the version ``status`` names: kept ones, else ``load()``'s."""
        with self._lock:
            found = self._kept.get(status.uri)
            if found is not None and found[:2] == (status.version, status.mtime_ns):
                self._kept.move_to_end(status.uri)
                return found[2]
        loaded = load()
        with self._lock:
            self._kept[status.uri] = (status.version, status.mtime_ns, loaded)
            self._kept.move_to_end(status.uri)
            while len(self._kept) > self._entries:
                self._kept.popitem(last=False)
        return loaded

    def forget(self, uri: str) -> None:
        """Drop what is kept of ``uri`` (written or deleted through the endpoint)."""
        with self._lock:
            self._kept.pop(uri, None)
