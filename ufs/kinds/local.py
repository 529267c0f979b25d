"""Local directories (``file://``) as a storage kind: no keys of its own; its errors are OS
errors, which the adapter's shared rules translate."""

from __future__ import annotations

from typing import TYPE_CHECKING

from config import Config
from ufs.errors import UfsError
from ufs.kind import UfsKind

if TYPE_CHECKING:
    from ufs.backend import UfsBackend
    from ufs.deadline import ThreadRunner
    from ufs.options import UfsOptions


def _backend(scheme: str, options: UfsOptions, threads: ThreadRunner) -> UfsBackend:
    from ufs.local import LocalBackend

    return LocalBackend(threads)


def _no_options(config: Config) -> None:
    return None


def _no_translation(exc: BaseException, what: str, uri: str) -> UfsError | None:
    return None


KIND = UfsKind(
    name="local",
    schemes=frozenset({"file"}),
    keys=[],
    options=_no_options,
    backend=_backend,
    translate=_no_translation,
)
