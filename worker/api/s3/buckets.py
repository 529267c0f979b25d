"""Bucket names of the S3 endpoint and the URIs their keys name.

Each ``s3://NAME`` (or ``s3a://NAME``) mount root is bucket ``NAME``; ``dora.worker.s3.buckets``
names other roots (``scratch=file:///data/scratch``); a mount root that is a whole store
(``s3://``) makes every bucket name not taken by those a bucket of that store. A key is the
rest of a URI under its bucket's root, so the mount roots stay the boundary: a key is made a
URI by ``ufs.uri.normalize``, which refuses ``..`` and empty segments, and every operation
checks the roots again (a key of a whole store's bucket lies inside the root ``s3://``)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from config import Config
from ufs import uri as uris
from ufs.errors import UfsError
from ufs.roots import MountRoots, is_store
from worker.api.s3.errors import no_such_bucket
from worker.api.s3.keys import BUCKETS

# S3's rules for a bucket name (what a virtual-hosted name can hold).
_NAME = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")


@dataclass(frozen=True)
class Buckets:
    """Bucket name → root URI (canonical), and the whole store (``s3://``: its scheme) whose
    buckets are all served besides, if a mount root is one. Immutable, so thread-safe."""

    roots: dict[str, str]
    store: str | None = None

    @classmethod
    def from_config(cls, config: Config, mounts: MountRoots) -> Buckets:
        """The buckets of ``config``; ConfigError naming ``dora.worker.s3.buckets`` for a pair
        that is not ``name=URI``, a bad name, a name given twice or a URI outside the roots."""
        roots: dict[str, str] = {}
        store = None
        for root in mounts.roots:
            scheme, rest = uris.split(root)
            if is_store(root):
                store = store or scheme
            elif scheme in uris.S3_SCHEMES and "/" not in rest:
                roots[rest] = root
        named: set[str] = set()
        for item in config.get(BUCKETS):
            name, sep, uri = (part.strip() for part in item.partition("="))
            if not sep or not valid_name(name) or name in named:
                raise config.invalid(
                    BUCKETS, f"{item!r}: expected distinct name=URI pairs, each name a bucket "
                    "name (3-63 of a-z, 0-9, '.', '-')")  # fmt: skip
            try:
                roots[name] = mounts.check(uri)
            except UfsError as exc:
                raise config.invalid(BUCKETS, f"{item!r}: {exc}") from None
            named.add(name)
        return cls(roots, store)

    def __iter__(self) -> Iterator[str]:
        """The buckets named by the configuration (a whole store's are the store's to list)."""
        return iter(sorted(self.roots))

    def root(self, bucket: str) -> str:
        """The root URI of ``bucket``; NoSuchBucket when there is none (a bucket of the whole
        store is named whether or not the store has it: the store answers for it)."""
        found = self.roots.get(bucket)
        if found is None and self.store is not None and valid_name(bucket):
            found = f"{self.store}://{bucket}"
        if found is None:
            raise no_such_bucket(bucket)
        return found

    def in_store(self, bucket: str) -> bool:
        """Whether ``bucket`` is the whole store's own bucket of that name, so bucket
        operations on it pass through to the store."""
        return self.store is not None and self.root(bucket) == f"{self.store}://{bucket}"

    def uri(self, bucket: str, key: str) -> str:
        """The canonical URI of ``key`` in ``bucket`` (an empty key: the root). Raises
        NoSuchBucket, UfsInvalidPath for a key no canonical URI can name (``..``)."""
        root = self.root(bucket)
        return uris.normalize(f"{root}/{key}") if key else root

    def key(self, bucket: str, uri: str) -> str:
        """The key of canonical ``uri``, which lies under ``bucket``'s root."""
        return uri[len(self.root(bucket)) + 1 :]


def valid_name(name: str) -> bool:
    """Whether ``name`` keeps S3's rules for a bucket name."""
    return _NAME.fullmatch(name) is not None
