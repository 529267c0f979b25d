"""What some stores offer beyond files: their buckets, and multipart uploads of their own.

A backend that has them implements :class:`BucketStore` or :class:`UploadStore` (the S3 backend
does both); one that has not (a local directory, Azure) implements neither, and its callers
keep their own way (the S3 endpoint keeps a multipart upload's parts on the worker's disk).
The facade hands them out (:meth:`ufs.adapter.Ufs.uploads`, :meth:`ufs.adapter.Ufs.buckets`)
wrapped in :class:`Uploads` and :class:`Buckets`, which give every call the facade's deadline
and error translation, as every other UFS call has.

A refusal that is the caller's mistake, named by the store (no such upload, a part that was
not uploaded, a bucket not empty), is :class:`UfsStoreRefused` with the store's own code and
status, for a surface that speaks the store's protocol to answer as the store did.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import IO, Protocol, TypeVar, runtime_checkable

from ufs import uri as uris
from ufs.attributes import Attributes
from ufs.deadline import Deadline
from ufs.errors import UfsError
from ufs.status import UfsStatus

T = TypeVar("T")
Call = Callable[[str, str, Callable[[Deadline], T], Deadline | None, bool], T]
"""The facade's ``_call``: (what, uri, request, caller's deadline, retry) → the answer."""


class UfsStoreRefused(UfsError):
    """The store refused a bucket or multipart request as the caller's mistake: ``code`` and
    ``status`` are the store's (``NoSuchUpload``, 404)."""

    def __init__(self, code: str, status: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.status = status


@dataclass(frozen=True)
class StoreBucket:
    """A bucket of a store: its name and when it was made (ns since the epoch)."""

    name: str
    created_ns: int


@dataclass(frozen=True)
class StorePart:
    """A part of an upload in progress, as the store lists it."""

    number: int
    etag: str
    size: int
    mtime_ns: int


@dataclass(frozen=True)
class StoreUpload:
    """An upload in progress: the URI it will write, its id (the store's), when it began."""

    uri: str
    id: str
    initiated_ns: int


@dataclass(frozen=True)
class PartsPage:
    """One page of an upload's parts, after a part number; ``truncated``: more follow."""

    parts: Sequence[StorePart]
    truncated: bool


@dataclass(frozen=True)
class UploadsPage:
    """One page of the uploads in progress; ``truncated``: more follow."""

    uploads: Sequence[StoreUpload]
    truncated: bool


@runtime_checkable
class BucketStore(Protocol):
    """A store whose buckets can be listed, made and removed (``scheme://`` is the store).
    Methods raise as :class:`ufs.backend.UfsBackend`'s do, and :class:`UfsStoreRefused` for
    the store's refusals (BucketAlreadyExists, BucketNotEmpty, NoSuchBucket, ...)."""

    def list_buckets(self, deadline: Deadline) -> list[StoreBucket]: ...

    def create_bucket(self, name: str, deadline: Deadline) -> None: ...

    def delete_bucket(self, name: str, deadline: Deadline) -> None: ...


@runtime_checkable
class UploadStore(Protocol):
    """A store with multipart uploads of its own: the object appears whole on completion, or
    not at all. ``uri`` is the object's canonical URI; ids and ETags are the store's. Methods
    raise as :class:`BucketStore`'s do (NoSuchUpload, InvalidPart, ... as
    :class:`UfsStoreRefused`)."""

    def create_upload(self, uri: str, deadline: Deadline, attributes: Attributes) -> str:
        """A new upload of ``uri``, the object to be stored with ``attributes``; its id."""
        ...

    def upload_part(
        self, uri: str, upload_id: str, number: int, body: IO[bytes], size: int, deadline: Deadline
    ) -> str:
        """Part ``number`` from ``size`` bytes of the seekable ``body`` (read from where it
        is); its ETag."""
        ...

    def complete_upload(
        self, uri: str, upload_id: str, parts: Sequence[tuple[int, str]], deadline: Deadline
    ) -> UfsStatus:
        """The object made of ``parts`` (number, ETag), in order; its status."""
        ...

    def abort_upload(self, uri: str, upload_id: str, deadline: Deadline) -> None: ...

    def list_parts(
        self, uri: str, upload_id: str, after: int, most: int, deadline: Deadline
    ) -> PartsPage: ...

    def list_uploads(
        self, prefix: str, after: tuple[str, str] | None, most: int, deadline: Deadline
    ) -> UploadsPage:
        """The uploads to URIs that start with ``prefix`` (a canonical URI, or one with a
        partial last segment), by URI then start, after (URI, upload id) ``after``."""
        ...


class _Bounded:
    """A store's calls run through the facade's ``_call``."""

    def __init__(self, call: Call[object]) -> None:
        self._call = call

    def _run(self, what: str, uri: str, request: Callable[[Deadline], T],
             deadline: Deadline | None, retry: bool = False) -> T:  # fmt: skip
        call: Call[T] = self._call  # type: ignore[assignment]
        return call(what, uri, request, deadline, retry)


class Uploads(_Bounded):
    """The multipart uploads of one store, each call bounded by its deadline (the facade's
    own, or the caller's when earlier) with the facade's error translation. A part is sent
    again (from the start of its body) when the store was unavailable and time remains;
    nothing else is retried, as an upload's creation or completion is not idempotent.
    Thread-safe, as the store is."""

    def __init__(self, store: UploadStore, call: Call[object]) -> None:
        super().__init__(call)
        self._store = store

    def create(self, uri: str, deadline: Deadline | None, attributes: Attributes) -> str:
        create = partial(self._store.create_upload, uri, attributes=attributes)
        return self._run("create upload", uri, create, deadline)

    def upload_part(self, uri: str, upload_id: str, number: int, body: IO[bytes], size: int,
                    deadline: Deadline | None) -> str:  # fmt: skip
        start = body.tell()

        def send(step: Deadline) -> str:
            body.seek(start)
            return self._store.upload_part(uri, upload_id, number, body, size, step)

        return self._run("upload part", uri, send, deadline, retry=True)

    def complete(self, uri: str, upload_id: str, parts: Sequence[tuple[int, str]],
                 deadline: Deadline | None) -> UfsStatus:  # fmt: skip
        complete = partial(self._store.complete_upload, uri, upload_id, parts)
        return self._run("complete upload", uri, complete, deadline)

    def abort(self, uri: str, upload_id: str, deadline: Deadline | None) -> None:
        abort = partial(self._store.abort_upload, uri, upload_id)
        self._run("abort upload", uri, abort, deadline, retry=True)

    def parts(self, uri: str, upload_id: str, after: int, most: int,
              deadline: Deadline | None) -> PartsPage:  # fmt: skip
        listed = partial(self._store.list_parts, uri, upload_id, after, most)
        return self._run("list parts", uri, listed, deadline, retry=True)

    def in_progress(self, prefix: str, after: tuple[str, str] | None, most: int,
                    deadline: Deadline | None) -> UploadsPage:  # fmt: skip
        listed = partial(self._store.list_uploads, prefix, after, most)
        return self._run("list uploads", prefix, listed, deadline, retry=True)


class Buckets(_Bounded):
    """The buckets of one store (``scheme://``), each call bounded and translated as
    :class:`Uploads`' are. Thread-safe, as the store is."""

    def __init__(self, scheme: str, store: BucketStore, call: Call[object]) -> None:
        super().__init__(call)
        self._root = f"{scheme}://"
        self._store = store

    def list(self, deadline: Deadline | None) -> list[StoreBucket]:
        return self._run("list buckets", self._root, self._store.list_buckets, deadline, True)

    def create(self, name: str, deadline: Deadline | None) -> None:
        uri = uris.normalize(self._root + name)
        self._run("create bucket", uri, partial(self._store.create_bucket, name), deadline)

    def delete(self, name: str, deadline: Deadline | None) -> None:
        uri = uris.normalize(self._root + name)
        self._run("delete bucket", uri, partial(self._store.delete_bucket, name), deadline)
