"""The pins ``dora fs pin`` made: URIs, each a file or a prefix, kept in the work dir.

The table is saved on every change (written aside and renamed into place, mode 0600: it names
the paths a worker serves) and read at start, so pins survive a restart; the worker applies
them to the page store once its restore is done (``worker.pinning``).
"""

from __future__ import annotations

import json
import logging
import os
import threading
from dataclasses import dataclass
from pathlib import Path

from pagestore.files import uri_under
from pagestore.keys import PIN_MAX
from worker.common.errors import PinLimitExceeded

log = logging.getLogger(__name__)

FILE_NAME = "pins.json"


@dataclass(frozen=True, slots=True)
class Pin:
    """One pin: of a file, or ``recursive``ly of everything under a prefix, and the bytes its
    files held when it was made (what it counts against the bound)."""

    recursive: bool
    bytes: int


class PinTable:
    """Pinned URIs (:class:`Pin`), saved to ``path`` (None: kept in memory only).
    Thread-safe: one lock guards the table and its file."""

    def __init__(self, path: Path | None) -> None:
        self._path = path
        self._lock = threading.Lock()
        self._pins: dict[str, Pin] = self._load()

    def _load(self) -> dict[str, Pin]:
        """The saved table; an unreadable one is logged and the worker starts with none (pins
        only steer eviction: losing them loses no data)."""
        if self._path is None or not self._path.exists():
            return {}
        try:
            saved = json.loads(self._path.read_text(encoding="utf-8"))
            return {
                str(entry["uri"]): Pin(bool(entry["recursive"]), int(entry["bytes"]))
                for entry in saved["pins"]
            }
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.error("pins not restored: %s cannot be read: %s", self._path, exc)
            return {}

    def _save(self) -> None:
        if self._path is None:
            return
        pins = sorted(self._pins.items())
        text = json.dumps(
            {"pins": [{"uri": u, "recursive": p.recursive, "bytes": p.bytes} for u, p in pins]}
        )
        self._path.parent.mkdir(parents=True, exist_ok=True)
        aside = self._path.with_name(self._path.name + ".tmp")
        fd = os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(aside, self._path)

    def entries(self) -> list[tuple[str, Pin]]:
        """Every pin, in URI order."""
        with self._lock:
            return sorted(self._pins.items())

    def add(self, uri: str, recursive: bool, size: int, limit: int) -> None:
        """Pin ``uri`` (a file, or with ``recursive`` everything under it), whose files not
        pinned yet hold ``size`` bytes, if with the pins' bytes before they stay within
        ``limit``. Raises PinLimitExceeded otherwise, and OSError when the table cannot be
        saved (the pin is then not made)."""
        with self._lock:
            reserved = sum(pin.bytes for pin in self._pins.values())
            if reserved + size > limit:
                raise PinLimitExceeded(
                    f"cannot pin {uri!r}: its {size} bytes and the {reserved} bytes pinned "
                    f"before would pass the bound of {limit} bytes ({PIN_MAX.name})"
                )
            before = self._pins.get(uri)
            if before is None:
                self._pins[uri] = Pin(recursive, size)
            else:
                self._pins[uri] = Pin(recursive or before.recursive, before.bytes + size)
            try:
                self._save()
            except OSError:
                self._restore(uri, before)
                raise

    def remove(self, uri: str, recursive: bool) -> list[str]:
        """Drop the pin of ``uri`` (with ``recursive``, every pin at or under it too); the URIs
        unpinned. Raises OSError when the table cannot be saved (nothing is then dropped)."""
        with self._lock:
            gone = [u for u in self._pins if u == uri or (recursive and uri_under(u, uri))]
            before = {u: self._pins.pop(u) for u in gone}
            try:
                self._save()
            except OSError:
                self._pins.update(before)
                raise
            return gone

    def _restore(self, uri: str, before: Pin | None) -> None:
        if before is None:
            del self._pins[uri]
        else:
            self._pins[uri] = before

    def covers(self, uri: str) -> bool:
        """Whether a pin names ``uri`` or a prefix it lies under (on a segment boundary)."""
        with self._lock:
            if uri in self._pins:
                return True
            return any(p.recursive and uri_under(uri, u) for u, p in self._pins.items())
