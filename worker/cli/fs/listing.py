"""``dora fs ls``, ``stat``, ``du`` and ``find``: what is there, how large, how much of it is
cached. Paths may be glob patterns (``s3://b/**/part-*.parquet``), as with ``gsutil ls``."""

from __future__ import annotations

import argparse
import fnmatch
import json
from collections.abc import Iterator
from glob import has_magic
from typing import Any

from worker.cli.fs.formats import cached_percent, long_line, size_text
from worker.cli.fs.session import Session, statuses
from worker.client import DoraFileSystem


def ls(session: Session, args: argparse.Namespace) -> int:
    """One line per entry (see :func:`worker.cli.fs.formats.long_line`): a directory's children
    (with ``-R`` everything below it), a file itself, or a pattern's matches."""
    for path in args.paths:
        for info in _listing(session.fs, path, args.recursive):
            print(long_line(info, args.human))
    return 0


def _listing(fs: DoraFileSystem, path: str, recursive: bool) -> list[dict[str, Any]]:
    if has_magic(path):
        found = statuses(fs, path)
        if not recursive:
            return found
        return [entry for info in found for entry in [info, *_below(fs, info)]]
    info = fs.info(path)
    if info["type"] != "directory":
        return [info]
    return _below(fs, info, maxdepth=None if recursive else 1)


def _below(fs: DoraFileSystem, info: dict[str, Any], maxdepth: int | None = None) -> list[Any]:
    """Everything below ``info`` (a directory; nothing for a file), sorted by name."""
    if info["type"] != "directory":
        return []
    root = str(info["name"])
    found = fs.find(root, maxdepth=maxdepth, withdirs=True, detail=True)
    return [entry for name, entry in sorted(found.items()) if name.startswith(root + "/")]


def stat(session: Session, args: argparse.Namespace) -> int:
    """Each path's status as JSON: name, size, type, mtime, version, cached bytes."""
    for path in args.paths:
        print(json.dumps(session.fs.info(path), indent=2))
    return 0


def du(session: Session, args: argparse.Namespace) -> int:
    """``SIZE  CACHED  SHARE%  PATH`` for each child of each directory (a directory's size is
    all below it), or with ``-s`` once per path; a file is its own line."""
    fs = session.fs
    for path in args.paths:
        for info in statuses(fs, path):
            for name, size, cached in _usage(fs, info, args.summary):
                print(
                    f"{size_text(size, args.human):>12}  {size_text(cached, args.human):>12}  "
                    f"{cached_percent(size, cached):>3}%  {name}"
                )
    return 0


def _usage(
    fs: DoraFileSystem, info: dict[str, Any], summary: bool
) -> Iterator[tuple[str, int, int]]:
    root = str(info["name"])
    if info["type"] != "directory":
        yield root, info["size"], info["cached_bytes"]
        return
    totals: dict[str, list[int]] = {}
    for entry in _below(fs, info):
        child = root if summary else f"{root}/{entry['name'][len(root) + 1 :].split('/')[0]}"
        total = totals.setdefault(child, [0, 0])
        if entry["type"] != "directory":
            total[0] += entry["size"]
            total[1] += entry["cached_bytes"]
    if summary and not totals:
        totals[root] = [0, 0]
    for name, (size, cached) in sorted(totals.items()):
        yield name, size, cached


def find(session: Session, args: argparse.Namespace) -> int:
    """The full URI of everything below each path (or matching a pattern, and below each
    matching directory) whose name matches ``--name`` and whose type is ``--type``."""
    fs = session.fs
    for path in args.paths:
        for info in statuses(fs, path):
            candidates = [info] if has_magic(path) else []
            candidates += _below(fs, info, args.maxdepth)
            for entry in candidates:
                if _wanted(entry, args.name, args.type):
                    print(entry["name"])
    return 0


def _wanted(info: dict[str, Any], pattern: str | None, kind: str | None) -> bool:
    name = str(info["name"]).rsplit("/", 1)[-1]
    if pattern is not None and not fnmatch.fnmatchcase(name, pattern):
        return False
    return kind is None or (kind == "d") == (info["type"] == "directory")
