"""The store's directories at run time: space accounting, eviction policy and service state of
each, and the choice of directory for a file's pages."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Sequence

from pagestore.disk import PageDir
from pagestore.evict import make_evictor
from pagestore.files import FileTable
from pagestore.options import PageDirOptions
from pagestore.page import PageKey
from pagestore.pins import PinningEvictor, PinState
from pagestore.quota import QuotaBook


class StoreDir:
    """One directory's runtime state. Not thread-safe: the store guards everything but ``disk``
    (which is safe on its own) with its lock."""

    def __init__(
        self,
        number: int,
        options: PageDirOptions,
        page_size: int,
        evictor: str,
        pins: PinState,
        size_of: Callable[[PageKey], int],
        quotas: QuotaBook | None = None,
    ) -> None:
        self.number = number
        self.disk = PageDir(options.path, page_size)
        self.capacity = options.capacity
        self.used = 0  # data bytes of indexed pages
        self.reserved = 0  # data bytes of pages being written
        self._policy = evictor
        self._pins = pins
        self._size_of = size_of
        self._quotas = quotas
        self.evictor = self._new_evictor()
        self.files = FileTable()
        self.in_service = True
        self.last_errno: int | None = None  # so a failing disk is logged once, not on every put

    def take_out_of_service(self) -> None:
        """Forget the pages and files (the caller drops the pages from the index); in-flight
        reservations are released by their writers as usual."""
        self.in_service = False
        self.evictor.clear()
        self.evictor = self._new_evictor()
        self.files.clear()
        self.used = 0

    def _new_evictor(self) -> PinningEvictor:
        return PinningEvictor(make_evictor(self._policy), self._pins, self._size_of, self._quotas)

    def score(self, file_id: str) -> float:
        """Weighted rendezvous hashing: a file's pages go to the directory scoring highest, each
        directory winning in proportion to its capacity. Losing a directory moves only the files
        that were on it, and the choice is the same in every run with the same directories."""
        key = f"{self.disk.root}\0{file_id}".encode()
        digest = hashlib.blake2b(key, digest_size=8).digest()
        unit = (int.from_bytes(digest, "big") + 0.5) / 2.0**64
        return self.capacity / -math.log(unit)


def place(dirs: Sequence[StoreDir], file_id: str) -> StoreDir | None:
    """The directory in service that should hold ``file_id``'s pages, or None if there is none."""
    candidates = [d for d in dirs if d.in_service]
    if len(candidates) <= 1:
        return candidates[0] if candidates else None
    return max(candidates, key=lambda d: d.score(file_id))
