"""Errors of the metadata tiers. UFS errors (``ufs.errors``) pass through unchanged."""

from __future__ import annotations

from worker.common.errors import Catalogued


class MetaError(Exception):
    """Base of the errors the metadata tiers raise themselves."""


class MetaVersionMismatch(MetaError, Catalogued):
    """The caller asked for version ``wanted`` of ``uri`` but the UFS has ``actual``, even after
    a sync (the REST API answers 412)."""

    error_code = "VersionMismatch"

    def __init__(self, uri: str, wanted: str, actual: str) -> None:
        super().__init__(f"{uri!r} is at version {actual!r}, not the requested {wanted!r}")
        self.uri = uri
        self.wanted = wanted
        self.actual = actual


class MetastoreError(MetaError):
    """The persistent metastore failed."""


class MetastoreOpenError(MetastoreError):
    """The metastore directory could not be opened (and was not, or could not be, wiped)."""


class MetastoreBusy(MetastoreOpenError):
    """Another metastore (in this or another process) holds the directory; it is never wiped."""


class CorruptEntry(MetastoreError):
    """A stored value cannot be decoded."""
