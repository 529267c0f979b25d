"""What every ``dora fs`` command shares: the ``dora`` filesystem it works through (so every call
goes to the worker that owns the path on the hash ring, as from Python), glob expansion, and the
one place where an error becomes one line on stderr and an exit status."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from glob import has_magic
from typing import Any

from config import Config, Source
from worker.cli.common import EXIT_FAILURE, EXIT_USAGE
from worker.client import DoraError, DoraFileSystem
from worker.common.client_keys import USER_CLIENT_FALLBACK_TO_UFS

# What a shell reports for a command ended by Ctrl-C (128 + SIGINT).
EXIT_INTERRUPTED = 130


@dataclass(frozen=True)
class Session:
    """The filesystem a command works through and the configuration it was built from."""

    fs: DoraFileSystem
    config: Config

    @classmethod
    def open(cls, config: Config, worker: str | None) -> Session:
        """A session on ``worker`` (``host:port``), or on the workers of ``dora.user.workers``
        (or etcd). Raises ValueError for a malformed worker address or client option.

        Unless the user set ``dora.user.client.fallback.to.ufs``, reads do not fall back to the
        UFS: ``dora fs`` is a tool of the cache, and an unreachable worker must be reported,
        not read around. No near-cache: a command lives for one call, and what it shows (the
        bytes cached, for one) must be the worker's answer of now."""
        explicit = config.setting(USER_CLIENT_FALLBACK_TO_UFS).source is not Source.DEFAULT
        fs = DoraFileSystem(
            workers=[worker] if worker else None,
            config=config,
            fallback_to_ufs=None if explicit else False,
            near_cache=False,
        )
        return cls(fs, config)


Command = Callable[[Session, argparse.Namespace], int]


class Failure(Exception):
    """A command's own refusal (a directory without ``-R``, a glob that matched nothing): the
    message for stderr and the exit status."""

    def __init__(self, message: str, status: int = EXIT_FAILURE) -> None:
        super().__init__(message)
        self.status = status


def is_remote(path: str) -> bool:
    """Whether a ``cp`` argument names a file through the cache (a URI such as ``s3://b/k``,
    ``file:///data/x``, ``dora://s3://b/k``, ``dora::s3://b/k``) rather than a local path."""
    return "://" in path or path.startswith("dora::")


def expand(fs: DoraFileSystem, path: str) -> list[str]:
    """``path`` itself, or for a glob pattern (``*``, ``?``, ``[...]``, ``**``) its matches in
    order. Failure if a pattern matches nothing."""
    if not has_magic(path):
        return [path]
    found = sorted(fs.glob(path))
    if not found:
        raise Failure(f"{path}: no match")
    return found


def statuses(fs: DoraFileSystem, path: str) -> list[dict[str, Any]]:
    """The info dict of ``path``, or of each match of a glob pattern in order. NotFound for a
    missing path, Failure if a pattern matches nothing."""
    if not has_magic(path):
        return [fs.info(path)]
    found: dict[str, dict[str, Any]] = fs.glob(path, detail=True)
    if not found:
        raise Failure(f"{path}: no match")
    return [found[name] for name in sorted(found)]


def uri(fs: DoraFileSystem, path: str) -> str:
    """The full UFS URI ``path`` names (``dora://s3://b/k/`` -> ``s3://b/k``)."""
    return str(fs._strip_protocol(path))


def execute(action: str, work: Callable[[], int]) -> int:
    """Run a command; every error is one line on stderr (``dora fs ACTION: ...``) and an exit
    status: 2 for a usage error (a malformed path or option), 1 for a failed operation, 130
    for Ctrl-C. A closed stdout (``dora fs cat ... | head``) ends the command quietly."""
    try:
        return work()
    except KeyboardInterrupt:
        return _fail(action, "interrupted", EXIT_INTERRUPTED)
    except BrokenPipeError:
        # Later writes (the interpreter's flush at exit included) go nowhere instead of failing.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Failure as exc:
        return _fail(action, str(exc), exc.status)
    except DoraError as exc:
        return _fail(action, str(exc), EXIT_USAGE if isinstance(exc, ValueError) else EXIT_FAILURE)
    except OSError as exc:  # a local file or directory
        reason = f"{exc.filename}: {exc.strerror}" if exc.filename and exc.strerror else str(exc)
        return _fail(action, reason, EXIT_FAILURE)
    except ValueError as exc:  # a malformed option or worker address
        return _fail(action, str(exc), EXIT_USAGE)


def _fail(action: str, message: str, status: int) -> int:
    one_line = " ".join(message.splitlines())
    print(f"dora fs {action}: {one_line}", file=sys.stderr, flush=True)
    return status
