"""``dora fs cp``, ``get`` and ``put``: copies between local files and the cache, and within the
cache, of files or trees (``-R``), with a progress line on a terminal. :data:`PLACEMENT` says
where copies land.

Everything is listed first (so the progress line knows the total), then copied file by file.
A local file is written under a temporary name and renamed into place once complete, so an
interrupted download leaves no partial file; the worker writes each object whole.
"""

from __future__ import annotations

import argparse
import enum
import os
import secrets
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from glob import has_magic
from typing import Any, Protocol

from fsspec.callbacks import Callback

from worker.cli.common import EXIT_USAGE
from worker.cli.fs.progress import Progress
from worker.cli.fs.session import Failure, Session, is_remote, uri
from worker.client import DoraFileSystem

_MAGIC = "*?["

PLACEMENT = """\
Where a copy lands follows `cp -r` and fsspec's put/get/copy:
- a file copied to a target ending in / or naming an existing directory goes into it under its
  own name; otherwise it becomes the target;
- a directory (only with -R) copied to such a target goes into it under its own name; otherwise
  it becomes the target. A source ending in / copies only its contents;
- the matches of a glob ('s3://b/logs/**/*.gz') go into the target with their path below the
  pattern's fixed part (s3://b/logs), so no two collide; matched directories need -R;
- several sources go into the target as a directory.
A side is local unless it is a URI (s3://, file://, dora://, dora::)."""


class CopyDirection(enum.Enum):
    """The direction of a copy, named as the line printed for each file names it."""

    UPLOAD = "upload"
    DOWNLOAD = "download"
    COPY = "copy"


@dataclass(frozen=True)
class CopySide:
    """A file or directory on one side of a copy; ``size`` is 0 for a directory."""

    path: str
    size: int
    is_dir: bool


@dataclass(frozen=True)
class Transfer:
    """One file to copy, or one directory to create, at ``target``."""

    source: str
    target: str
    size: int
    is_dir: bool


class Side(Protocol):
    """Local files or the cache, as a copy sees them."""

    def entry(self, path: str) -> CopySide:
        """What ``path`` is; raises Failure or FileNotFoundError if it does not exist."""

    def under(self, root: CopySide) -> list[tuple[str, CopySide]]:
        """Everything below directory ``root`` as (path relative to it, entry), parents first."""

    def is_dir(self, path: str) -> bool:
        """Whether ``path`` is an existing directory."""

    def join(self, base: str, relative: str) -> str:
        """``relative`` (``/``-separated) below ``base``."""

    def name(self, path: str) -> str:
        """The last segment of ``path``."""

    def canonical(self, path: str) -> str:
        """How ``path`` is shown and compared (a full URI in the cache)."""


class LocalSide:
    """Local files, named as the user wrote them."""

    def entry(self, path: str) -> CopySide:
        try:
            is_dir = os.path.isdir(path)
            return CopySide(path, 0 if is_dir else os.path.getsize(path), is_dir)
        except FileNotFoundError:
            raise Failure(f"{path}: no such local file or directory") from None

    def under(self, root: CopySide) -> list[tuple[str, CopySide]]:
        found: list[tuple[str, CopySide]] = []
        for folder, dirs, files in os.walk(root.path, onerror=_raise):
            dirs.sort()
            prefix = os.path.relpath(folder, root.path).replace(os.sep, "/")
            prefix = "" if prefix == "." else prefix + "/"
            for name in dirs:
                found.append((prefix + name, CopySide(os.path.join(folder, name), 0, True)))
            for name in sorted(files):
                path = os.path.join(folder, name)
                found.append((prefix + name, CopySide(path, os.path.getsize(path), False)))
        return found

    def is_dir(self, path: str) -> bool:
        return os.path.isdir(path)

    def join(self, base: str, relative: str) -> str:
        return os.path.join(base, *relative.split("/"))

    def name(self, path: str) -> str:
        return os.path.basename(os.path.abspath(path))

    def canonical(self, path: str) -> str:
        return path


class CacheSide:
    """Files through the cache, named by full UFS URIs."""

    def __init__(self, fs: DoraFileSystem) -> None:
        self.fs = fs

    def entry(self, path: str) -> CopySide:
        return _cache_entry(self.fs.info(path))

    def under(self, root: CopySide) -> list[tuple[str, CopySide]]:
        found = self.fs.find(root.path, withdirs=True, detail=True)
        return [
            (name[len(root.path) + 1 :], _cache_entry(info))
            for name, info in sorted(found.items())
            if name.startswith(root.path + "/")
        ]

    def is_dir(self, path: str) -> bool:
        return bool(self.fs.isdir(path))

    def join(self, base: str, relative: str) -> str:
        return f"{uri(self.fs, base)}/{relative}"

    def name(self, path: str) -> str:
        return uri(self.fs, path).rsplit("/", 1)[-1]

    def canonical(self, path: str) -> str:
        return uri(self.fs, path)


def plan(
    sources: Sequence[str],
    target: str,
    source_side: Side,
    target_side: Side,
    *,
    recursive: bool,
    kind: CopyDirection,
) -> list[Transfer]:
    """The files and directories to copy for ``sources`` to ``target`` (see the module
    docstring), parents before children. Raises Failure for a directory without
    ``recursive``, a glob without matches, or a copy of something onto or into itself."""
    into = len(sources) > 1 or target.endswith("/") or target_side.is_dir(target)
    transfers: list[Transfer] = []
    for source in sources:
        if isinstance(source_side, CacheSide) and has_magic(source):
            transfers += _matches(source_side, source, target, target_side, recursive)
            continue
        entry = source_side.entry(source)
        if entry.is_dir and not recursive:
            raise Failure(
                f"{source} is a directory: use -R to {kind.value} it and everything in it"
            )
        if entry.is_dir and source.endswith("/"):
            destination = target_side.canonical(target)
        elif into:
            destination = target_side.join(target, source_side.name(entry.path))
        else:
            destination = target_side.canonical(target)
        if kind is CopyDirection.COPY and (
            destination == entry.path or destination.startswith(entry.path + "/")
        ):
            raise Failure(f"cannot copy {entry.path} onto or into itself ({destination})")
        transfers += _tree(source_side, entry, destination, target_side)
    return transfers


def _tree(side: Side, entry: CopySide, target: str, target_side: Side) -> list[Transfer]:
    top = Transfer(entry.path, target, entry.size, entry.is_dir)
    if not entry.is_dir:
        return [top]
    below = side.under(entry)
    return [top] + [
        Transfer(item.path, target_side.join(target, relative), item.size, item.is_dir)
        for relative, item in below
    ]


def _matches(
    side: CacheSide, pattern: str, target: str, target_side: Side, recursive: bool
) -> list[Transfer]:
    found: dict[str, dict[str, Any]] = side.fs.glob(pattern, detail=True)
    if not found:
        raise Failure(f"{pattern}: no match")
    full = uri(side.fs, pattern)
    fixed = full[: min(full.index(c) for c in _MAGIC if c in full)].rsplit("/", 1)[0]
    transfers: list[Transfer] = []
    for path in sorted(found):
        entry = _cache_entry(found[path])
        if entry.is_dir and not recursive:
            continue  # as cp does with a directory among the files it is given
        transfers += _tree(
            side, entry, target_side.join(target, path[len(fixed) + 1 :]), target_side
        )
    if not transfers:
        raise Failure(f"{pattern}: matches only directories: use -R to copy them")
    return transfers


def run(session: Session, transfers: list[Transfer], kind: CopyDirection, quiet: bool) -> int:
    """Copy ``transfers`` in order: one ``KIND: SOURCE to TARGET`` line per file on stdout (as
    ``aws s3 cp`` prints), and a progress line on stderr when it is a terminal; neither with
    ``quiet``. Stops at the first error."""
    files = [t for t in transfers if not t.is_dir]
    progress = Progress(
        sum(t.size for t in files), len(files), enabled=not quiet and sys.stderr.isatty()
    )
    try:
        for transfer in transfers:
            if transfer.is_dir:
                _make_dir(session.fs, kind, transfer.target)
                continue
            _copy_file(session.fs, kind, transfer, progress.file_callback(transfer.size))
            progress.file_done(transfer.size)
            if not quiet:
                progress.note(f"{kind.value}: {transfer.source} to {transfer.target}")
    finally:
        progress.close()
    return 0


def _make_dir(fs: DoraFileSystem, kind: CopyDirection, path: str) -> None:
    if kind is CopyDirection.DOWNLOAD:
        os.makedirs(path, exist_ok=True)
    else:
        fs.makedirs(path, exist_ok=True)


def _copy_file(
    fs: DoraFileSystem, kind: CopyDirection, transfer: Transfer, callback: Callback
) -> None:
    if kind is CopyDirection.UPLOAD:
        fs.put_file(transfer.source, transfer.target, callback=callback)
    elif kind is CopyDirection.DOWNLOAD:
        _download(fs, transfer.source, transfer.target, callback)
    else:
        fs.cp_file(transfer.source, transfer.target)


def _download(fs: DoraFileSystem, source: str, target: str, callback: Callback) -> None:
    """Write ``source`` to a temporary file beside ``target``, renamed to it once complete."""
    if os.path.isdir(target):
        raise Failure(f"cannot download {source} to {target}: it is a directory")
    folder, name = os.path.split(os.path.abspath(target))
    os.makedirs(folder, exist_ok=True)
    temporary = os.path.join(folder, f".{name}.{secrets.token_hex(4)}.dora-part")
    # Created like any new file (0666 less the umask), never over an existing one.
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(descriptor, "wb") as out:
            fs.get_file(source, None, callback=callback, outfile=out)
        os.replace(temporary, target)
    except BaseException:
        os.unlink(temporary)
        raise


# -- the commands ------------------------------------------------------------------------------


def cp(session: Session, args: argparse.Namespace) -> int:
    """``cp SOURCE... TARGET``: each side is local unless it is a URI (``s3://``, ``file://``,
    ``dora://``, ``dora::``)."""
    remote = {is_remote(source) for source in args.sources}
    if len(remote) > 1:
        raise Failure("sources must be all local or all in the cache", EXIT_USAGE)
    from_cache, to_cache = remote.pop(), is_remote(args.target)
    if not (from_cache or to_cache):
        raise Failure("both ends are local: use cp, not dora fs cp", EXIT_USAGE)
    kind = (
        CopyDirection.COPY
        if from_cache and to_cache
        else CopyDirection.DOWNLOAD
        if from_cache
        else CopyDirection.UPLOAD
    )
    return _copy(session, args, args.sources, args.target, kind)


def get(session: Session, args: argparse.Namespace) -> int:
    """``get SOURCE... [LOCAL]``: with two or more arguments the last is the local target
    (unless it is a URI), else the current directory."""
    paths: list[str] = args.paths
    if len(paths) > 1 and not is_remote(paths[-1]):
        return _copy(session, args, paths[:-1], paths[-1], CopyDirection.DOWNLOAD)
    return _copy(session, args, paths, ".", CopyDirection.DOWNLOAD)


def put(session: Session, args: argparse.Namespace) -> int:
    """``put LOCAL... TARGET``."""
    return _copy(session, args, args.sources, args.target, CopyDirection.UPLOAD)


def _copy(
    session: Session, args: argparse.Namespace, sources: list[str], target: str, kind: CopyDirection
) -> int:
    local, cache = LocalSide(), CacheSide(session.fs)
    source_side: Side = cache if kind is not CopyDirection.UPLOAD else local
    target_side: Side = local if kind is CopyDirection.DOWNLOAD else cache
    transfers = plan(sources, target, source_side, target_side, recursive=args.recursive, kind=kind)
    return run(session, transfers, kind, args.quiet)


def _cache_entry(info: dict[str, Any]) -> CopySide:
    return CopySide(str(info["name"]), int(info["size"]), info["type"] == "directory")


def _raise(error: OSError) -> None:
    raise error
