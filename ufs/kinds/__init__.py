"""The registry of storage kinds: every module of this package declares one ``KIND``
(:class:`ufs.kind.UfsKind`), found here without a list to keep in step. A scheme no kind
claims is served by :class:`ufs.generic.FsspecBackend` when fsspec knows it."""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache
from typing import Any

from config.keys import PropertyKey
from ufs.errors import UfsError
from ufs.kind import UfsKind


@cache
def kinds() -> tuple[UfsKind, ...]:
    """Every declared kind, by module name; a scheme claimed twice is a programming error."""
    found: list[UfsKind] = []
    claimed: dict[str, str] = {}
    for module in sorted(m.name for m in pkgutil.iter_modules(__path__)):
        kind = importlib.import_module(f"{__name__}.{module}").KIND
        for scheme in kind.schemes:
            if scheme in claimed:
                raise RuntimeError(
                    f"scheme {scheme!r} claimed by {claimed[scheme]} and {kind.name}"
                )
            claimed[scheme] = kind.name
        found.append(kind)
    return tuple(found)


def kind_of(scheme: str) -> UfsKind | None:
    """The kind that serves ``scheme``, or None."""
    return next((k for k in kinds() if scheme in k.schemes), None)


def keys() -> list[PropertyKey[Any]]:
    """The property keys of every kind."""
    return [key for kind in kinds() for key in kind.keys]


def translate(exc: BaseException, what: str, uri: str) -> UfsError | None:
    """The UFS error the kind whose library raised ``exc`` makes of it, or None."""
    for kind in kinds():
        error = kind.translate(exc, what, uri)
        if error is not None:
            return error
    return None
