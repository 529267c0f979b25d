"""The in-memory index of stored pages: where each page lives and how big it is, grouped by file
version so a whole file can be dropped and its cached bytes counted without a scan."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from pagestore.page import PageKey


@dataclass(eq=False, slots=True)
class PageEntry:
    """One stored page: its directory (position in the store's list) and data size. Compared by
    identity, so a page dropped and stored again is a different entry."""

    dir: int
    size: int


@dataclass(slots=True)
class _Version:
    pages: dict[int, PageEntry] = field(default_factory=dict)
    size: int = 0


class PageIndex:
    """Page keys to entries, plus per file id and version. Not thread-safe: the store guards it
    with its lock."""

    def __init__(self) -> None:
        self._pages: dict[PageKey, PageEntry] = {}
        self._files: dict[str, dict[str, _Version]] = {}

    def __len__(self) -> int:
        return len(self._pages)

    def __contains__(self, key: PageKey) -> bool:
        return key in self._pages

    def __iter__(self) -> Iterator[tuple[PageKey, PageEntry]]:
        return iter(list(self._pages.items()))

    def get(self, key: PageKey) -> PageEntry | None:
        return self._pages.get(key)

    def add(self, key: PageKey, entry: PageEntry) -> None:
        """Record a page; the caller makes sure the key is not already present."""
        self._pages[key] = entry
        version = self._files.setdefault(key.file_id, {}).setdefault(key.version_key, _Version())
        version.pages[key.page_index] = entry
        version.size += entry.size

    def remove(self, key: PageKey, entry: PageEntry | None = None) -> PageEntry | None:
        """Forget a page and return its entry; with ``entry``, only if the page still has that
        entry (a reader that found a bad file must not drop a page rewritten since)."""
        current = self._pages.get(key)
        if current is None or (entry is not None and current is not entry):
            return None
        del self._pages[key]
        versions = self._files[key.file_id]
        version = versions[key.version_key]
        del version.pages[key.page_index]
        version.size -= current.size
        if not version.pages:
            del versions[key.version_key]
            if not versions:
                del self._files[key.file_id]
        return current

    def pages_of(self, file_id: str, version_key: str | None) -> list[PageKey]:
        """The keys of every page of a file (all versions when ``version_key`` is None)."""
        versions = self._files.get(file_id, {})
        chosen = versions if version_key is None else {version_key: versions.get(version_key)}
        return [
            PageKey(file_id, vkey, page_index)
            for vkey, version in chosen.items()
            if version is not None
            for page_index in version.pages
        ]

    def bytes_of(self, file_id: str, version_key: str) -> int:
        version = self._files.get(file_id, {}).get(version_key)
        return 0 if version is None else version.size

    def pages_between(
        self, file_id: str, version_key: str, first: int, last: int | None
    ) -> list[tuple[int, PageEntry]]:
        """The stored pages ``first..last`` (to the file's end when ``last`` is None) of a file
        version, by index, in order."""
        version = self._files.get(file_id, {}).get(version_key)
        if version is None:
            return []
        if last is not None and last - first < len(version.pages):
            found = ((index, version.pages.get(index)) for index in range(first, last + 1))
            return [(index, entry) for index, entry in found if entry is not None]
        end = last if last is not None else max(version.pages)
        chosen = [(i, entry) for i, entry in version.pages.items() if first <= i <= end]
        return sorted(chosen, key=lambda pair: pair[0])
