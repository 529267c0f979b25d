"""``dora fs cat``, ``head`` and ``tail``: a file's bytes on stdout, read through the cache in
parallel chunks pinned to one version of the file."""

from __future__ import annotations

import argparse
import sys

from worker.cli.fs.session import Failure, Session, statuses


def cat(session: Session, args: argparse.Namespace) -> int:
    """Each file (or each match of a pattern) in turn; a directory is an error."""
    out = sys.stdout.buffer
    for path in args.paths:
        for info in statuses(session.fs, path):
            if info["type"] == "directory":
                raise Failure(f"cannot cat {info['name']}: it is a directory")
            session.fs.get_file(info["name"], None, outfile=out)
    out.flush()
    return 0


def head(session: Session, args: argparse.Namespace) -> int:
    """The first ``-c`` bytes."""
    return _write(session.fs.cat_file(args.path, 0, args.bytes) if args.bytes else b"")


def tail(session: Session, args: argparse.Namespace) -> int:
    """The last ``-c`` bytes."""
    return _write(session.fs.cat_file(args.path, -args.bytes) if args.bytes else b"")


def _write(data: bytes) -> int:
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()
    return 0
