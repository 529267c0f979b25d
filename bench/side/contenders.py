"""The contenders: every way a Python user can reach the same bytes, behind one small interface.

A contender names the operations it takes part in (``info``, ``ls``, ``read``, ``random``) and
makes a :class:`Handle` for a scene. Workloads speak in object keys (``meta/d0/f00001``); each
handle maps a key to its own name for it (``bench/meta/...`` for s3fs, ``s3://bench/meta/...``
for dora, a path for the local copy).

Speed-ups of the dora client appear as :class:`ClientFeature` s: a constructor option of
:class:`worker.client.filesystem.DoraFileSystem`. A contender that needs a feature the client
does not have yet is reported ``n/a (not built)``; the plain ``dora fsspec`` contender turns
every built feature off, so it keeps measuring the path through the worker.
"""

from __future__ import annotations

import inspect
import itertools
import os
from collections.abc import Callable
from dataclasses import dataclass

import fsspec
import s3fs

from bench.side.handles import DoraHandle, FsspecHandle, Handle, HttpHandle, LocalHandle
from bench.side.services import SceneInfo
from worker.client.filesystem import DoraFileSystem

NOT_BUILT = "n/a (not built)"


@dataclass(frozen=True)
class ClientFeature:
    """A speed-up of the dora client, switched by a constructor option ``kwarg`` (bool)."""

    name: str
    kwarg: str

    def built(self) -> bool:
        return self.kwarg in inspect.signature(DoraFileSystem.__init__).parameters


SHORT_CIRCUIT = ClientFeature("short-circuit", "short_circuit")
NEAR_CACHE = ClientFeature("near-cache", "near_cache")
FEATURES = (SHORT_CIRCUIT, NEAR_CACHE)


@dataclass(frozen=True)
class Contender:
    """A row family of the tables. ``cached``: cold and warm differ (else one row). ``make``
    builds a handle from the scene and a tag that keeps per-process cache dirs apart."""

    name: str
    kind: str  # "limit", "peer" or "dora"
    ops: frozenset[str]
    cached: bool
    make: Callable[[SceneInfo, str], Handle]

    @property
    def needs(self) -> tuple[ClientFeature, ...]:
        return self.make.enable if isinstance(self.make, _Dora) else ()

    def missing(self) -> str | None:
        """Why this contender cannot run with this build of the client, or None."""
        absent = [f.kwarg for f in self.needs if not f.built()]
        if absent:
            return f"{NOT_BUILT}: DoraFileSystem has no {', '.join(absent)}= option"
        return None

    def states(self) -> tuple[str, ...]:
        return ("cold", "warm") if self.cached else ("",)

    def row(self, state: str) -> str:
        return f"{self.name}, {state}" if state else self.name


def _s3(info: SceneInfo, listings: bool) -> Handle:
    return FsspecHandle(
        lambda _: s3fs.S3FileSystem(**info.s3_options(), use_listings_cache=listings),
        lambda key: f"{info.bucket}/{key}",
        random_options={"cache_type": "none"},
    )


_caches = itertools.count()


def _caching(protocol: str) -> Callable[[SceneInfo, str], Handle]:
    def make(info: SceneInfo, tag: str) -> Handle:
        def cache_dir() -> str:
            path = os.path.join(info.cache_root, f"{protocol}-{tag}-{os.getpid()}-{next(_caches)}")
            os.makedirs(path)
            return path

        return FsspecHandle(
            lambda storage: fsspec.filesystem(
                protocol,
                target_protocol="s3",
                target_options=info.s3_options(),
                cache_storage=storage,
                skip_instance_cache=True,
            ),
            lambda key: f"{info.bucket}/{key}",
            cache_dirs=cache_dir,
        )

    return make


class _Dora:
    """Makes dora handles with ``enable`` on and every other built feature off."""

    def __init__(self, *enable: ClientFeature) -> None:
        self.enable = enable

    def __call__(self, info: SceneInfo, tag: str) -> Handle:
        return DoraHandle(info, {f.kwarg: f in self.enable for f in FEATURES if f.built()})


def _dora(*enable: ClientFeature) -> _Dora:
    return _Dora(*enable)


META = frozenset({"info", "ls"})
READS = frozenset({"read", "random"})
ALL = META | READS

CONTENDERS: tuple[Contender, ...] = (
    Contender("raw local file", "limit", ALL, False, lambda i, t: LocalHandle(i.local_root)),
    Contender("s3fs", "peer", ALL, False, lambda i, t: _s3(i, listings=False)),
    Contender("s3fs + listings cache", "peer", META, True, lambda i, t: _s3(i, listings=True)),
    Contender("simplecache::s3", "peer", READS, True, _caching("simplecache")),
    Contender("blockcache::s3", "peer", READS, True, _caching("blockcache")),
    Contender("dora fsspec", "dora", ALL, True, _dora()),
    Contender("dora fsspec + short-circuit", "dora", READS, True, _dora(SHORT_CIRCUIT)),
    # What DoraFileSystem(workers=[...]) is on the worker's host: both, so a warm read pins its
    # version from the near-cache and makes no call at all.
    Contender(
        "dora fsspec + fast path (default)",
        "dora",
        READS,
        True,
        _dora(SHORT_CIRCUIT, NEAR_CACHE),
    ),
    Contender("dora fsspec + near-cache", "dora", META, True, _dora(NEAR_CACHE)),
    Contender("dora raw HTTP", "dora", ALL, True, lambda i, t: HttpHandle(i)),
)


def by_name(name: str) -> Contender:
    """Raises KeyError naming the known contenders."""
    for contender in CONTENDERS:
        if contender.name == name:
            return contender
    raise KeyError(f"no contender {name!r}; known: {', '.join(c.name for c in CONTENDERS)}")


def for_op(op: str, chosen: list[str] | None = None) -> list[Contender]:
    """The contenders taking part in ``op``, filtered to names containing one of ``chosen``."""
    found = [c for c in CONTENDERS if op in c.ops]
    if chosen:
        found = [c for c in found if any(part in c.name for part in chosen)]
    return found
