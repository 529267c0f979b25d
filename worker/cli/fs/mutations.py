"""``dora fs rm``, ``mv``, ``mkdir``, ``touch``, ``invalidate``, ``free``, ``pin`` and ``unpin``:
changes made through the workers, so every worker's cache reflects them at once."""

from __future__ import annotations

import argparse

from worker.cli.fs.session import Session, expand


def remove(session: Session, args: argparse.Namespace) -> int:
    """Delete files, or directories (their contents too only with ``-R``); patterns are
    expanded first."""
    for path in args.paths:
        session.fs.rm(expand(session.fs, path), recursive=args.recursive)
    return 0


def move(session: Session, args: argparse.Namespace) -> int:
    """Rename a file or directory (into the target when it is a directory or ends with ``/``)."""
    session.fs.mv(args.source, args.target)
    return 0


def mkdir(session: Session, args: argparse.Namespace) -> int:
    """Create directories and their parents (an existing one is fine)."""
    for path in args.paths:
        session.fs.makedirs(path, exist_ok=True)
    return 0


def touch(session: Session, args: argparse.Namespace) -> int:
    """Create each missing file empty. An existing file or directory is left as it is: the
    worker writes whole objects and cannot change a file's time alone."""
    for path in args.paths:
        try:
            session.fs.pipe_file(path, b"", mode="create")
        except FileExistsError:
            continue
    return 0


def invalidate(session: Session, args: argparse.Namespace) -> int:
    """Drop a path (with ``-R`` everything below it) from every worker's cache."""
    dropped = session.fs.invalidate_cache(args.path, recursive=args.recursive)
    print(f"invalidated {dropped} entries")
    return 0


def free(session: Session, args: argparse.Namespace) -> int:
    """Alluxio's ``free``: drop a path's (with ``-R`` everything below it) cached pages and
    metadata from every worker, leaving the store as it is. That is what ``invalidate`` does
    (``POST /v1/invalidate``); this is the name Alluxio users look for."""
    dropped = session.fs.invalidate_cache(args.path, recursive=args.recursive)
    print(f"freed {args.path}: {dropped} cached statuses dropped")
    return 0


def pin(session: Session, args: argparse.Namespace) -> int:
    """Pin a file (a directory with ``-R``) on every worker: its pages are never evicted."""
    session.fs.pin(args.path, recursive=args.recursive)
    print(f"pinned {args.path}")
    return 0


def unpin(session: Session, args: argparse.Namespace) -> int:
    """Drop a pin (with ``-R`` every pin below the path too) on every worker."""
    session.fs.unpin(args.path, recursive=args.recursive)
    print(f"unpinned {args.path}")
    return 0
