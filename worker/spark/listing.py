"""Planning a read: the files under a path, listed through the worker, packed into partitions.

Packing follows Spark's file sources (``FilePartition.getFilePartitions``): files largest first,
each partition filled up to ``maxPartitionBytes`` counting an open cost per file, so that many
small files do not become many tiny tasks. Files are not split: a partition reads whole files.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ufs import uri as uris

# Spark's file sources skip these: job markers (_SUCCESS), metadata (_metadata), temp files.
HIDDEN_PREFIXES = ("_", ".")


@dataclass(frozen=True, slots=True)
class FileRef:
    """One file to read, as the worker listed it; picklable."""

    uri: str
    size: int
    mtime_ns: int
    version: str

    @classmethod
    def from_entry(cls, entry: Mapping[str, Any]) -> FileRef:
        """From a client ``ls``/``info`` entry (the worker's status fields, fsspec names as a
        fallback)."""
        return cls(
            uri=str(entry.get("uri") or entry["name"]),
            size=int(entry.get("size") or 0),
            mtime_ns=int(entry.get("mtime_ns") or 0),
            version=str(entry.get("version") or ""),
        )


def is_dir_entry(entry: Mapping[str, Any]) -> bool:
    return bool(entry.get("is_dir")) or entry.get("type") == "directory"


def list_files(fs: Any, path: str) -> list[FileRef]:
    """Every visible file under ``path`` (or ``path`` itself if it is a file), sorted by URI,
    listed through the worker with the client's sync interval.

    Raises FileNotFoundError if ``path`` does not exist.
    """
    info = fs.info(path)
    if not is_dir_entry(info):
        return [FileRef.from_entry({**info, "uri": info.get("uri") or path})]
    return sorted(_walk(fs, path), key=lambda ref: ref.uri)


def _walk(fs: Any, directory: str) -> Iterator[FileRef]:
    pending = [directory]
    while pending:
        for entry in fs.ls(pending.pop(), detail=True):
            ref = FileRef.from_entry(entry)
            if uris.name(ref.uri).startswith(HIDDEN_PREFIXES):
                continue
            if is_dir_entry(entry):
                pending.append(ref.uri)
            else:
                yield ref


def pack(files: list[FileRef], max_bytes: int, open_cost: int) -> list[list[FileRef]]:
    """Files grouped into partitions of at most ``max_bytes`` (with ``open_cost`` per file), a
    file larger than that alone in its own. Deterministic for a given listing."""
    groups: list[list[FileRef]] = []
    current: list[FileRef] = []
    current_bytes = 0
    for ref in sorted(files, key=lambda f: (-f.size, f.uri)):
        cost = ref.size + open_cost
        if current and current_bytes + cost > max_bytes:
            groups.append(current)
            current, current_bytes = [], 0
        current.append(ref)
        current_bytes += cost
    if current:
        groups.append(current)
    return groups
