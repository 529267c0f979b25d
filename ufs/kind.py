"""What a kind of storage declares to the UFS adapter: its schemes, its property keys and
options, how its backend is built and how its client library's errors read.

A kind of its own is a backend module (``ufs/<kind>.py``) and a declaration module
(``ufs/kinds/<kind>.py``) whose ``KIND`` is one :class:`UfsKind`; :mod:`ufs.kinds` finds the
declarations by themselves, so the adapter, the options and the error mapping name no kind.
A declaration imports no storage client: the key registry reads every declaration at start,
and only a process that reaches the storage imports its library (in ``backend``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from config import Config
from config.keys import PropertyKey
from ufs.errors import UfsError

if TYPE_CHECKING:
    from ufs.backend import UfsBackend
    from ufs.deadline import ThreadRunner
    from ufs.options import UfsOptions


@dataclass(frozen=True)
class UfsKind:
    """One storage kind.

    ``options(config)`` reads the kind's own keys into one frozen options value, which the
    adapter keeps in :attr:`ufs.options.UfsOptions.kinds`; ``backend(scheme, options,
    threads)`` builds the backend for one of ``schemes`` (``options.of(<its options type>)``
    gives it its own); ``translate(exc, what, uri)`` is the UFS error for an exception of the
    kind's client library, or None for one it does not know (the adapter then applies the
    rules for OS errors shared by every kind)."""

    name: str
    schemes: frozenset[str]
    keys: Sequence[PropertyKey[Any]]
    options: Callable[[Config], object]
    backend: Callable[[str, UfsOptions, ThreadRunner], UfsBackend]
    translate: Callable[[BaseException, str, str], UfsError | None]
