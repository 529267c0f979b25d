"""The JSON bodies of WebHDFS answers, in the shapes of Hadoop's WebHDFS REST API documentation
(and of what ``JsonUtilClient`` parses): ``FileStatus``, ``FileStatuses``, ``DirectoryListing``,
``ContentSummary``, ``FileChecksum``, ``BlockLocations``, ``Path`` and ``boolean``.

A file is one block (Spark plans splits by its own sizes and asks for the hosts of the whole
file); the block size shown is HDFS's default. Owner and group are the worker's: the UFS has
none to report.
"""

from __future__ import annotations

import hashlib
import struct
from typing import Any

from ufs.status import UfsStatus, file_id

BLOCK_SIZE = 128 << 20
OWNER = GROUP = "dora"
CHECKSUM_ALGORITHM = "MD5-of-0MD5-of-0CRC32C"


def file_status(status: UfsStatus, suffix: str) -> dict[str, Any]:
    """One ``FileStatus`` object; ``suffix`` is the name within a listing ("" for a status)."""
    mtime_ms = status.mtime_ns // 1_000_000
    return {
        "accessTime": 0 if status.is_dir else mtime_ms,
        "blockSize": 0 if status.is_dir else BLOCK_SIZE,
        "childrenNum": -1,
        # HDFS inode ids are positive longs; this one is stable for a URI on every host.
        "fileId": int(file_id(status.uri)[:15], 16),
        "group": GROUP,
        "length": 0 if status.is_dir else status.size,
        "modificationTime": mtime_ms,
        "owner": OWNER,
        "pathSuffix": suffix,
        "permission": "755" if status.is_dir else "644",
        "replication": 0 if status.is_dir else 1,
        "storagePolicy": 0,
        "type": "DIRECTORY" if status.is_dir else "FILE",
    }


def directory(suffix: str) -> dict[str, Any]:
    """A ``FileStatus`` for a virtual directory above the mount roots."""
    return {
        "accessTime": 0,
        "blockSize": 0,
        "childrenNum": -1,
        "fileId": 0,
        "group": GROUP,
        "length": 0,
        "modificationTime": 0,
        "owner": OWNER,
        "pathSuffix": suffix,
        "permission": "555",
        "replication": 0,
        "storagePolicy": 0,
        "type": "DIRECTORY",
    }


def status_answer(entry: dict[str, Any]) -> dict[str, Any]:
    return {"FileStatus": entry}


def statuses(entries: list[dict[str, Any]]) -> dict[str, Any]:
    return {"FileStatuses": {"FileStatus": entries}}


def directory_listing(entries: list[dict[str, Any]], remaining: int) -> dict[str, Any]:
    return {
        "DirectoryListing": {
            "partialListing": statuses(entries),
            "remainingEntries": remaining,
        }
    }


def content_summary(length: int, files: int, directories: int) -> dict[str, Any]:
    return {
        "ContentSummary": {
            "directoryCount": directories,
            "ecPolicy": "",
            "fileCount": files,
            "length": length,
            "quota": -1,
            "spaceConsumed": length,
            "spaceQuota": -1,
            "typeQuota": {},
        }
    }


def checksum(status: UfsStatus) -> dict[str, Any]:
    """A checksum derived from the file's version, in the ``MD5MD5CRC32FileChecksum`` layout
    the client decodes (bytes per CRC, CRCs per block, MD5). Equal versions give equal
    checksums (an S3 ETag is the content's MD5 for simple uploads, so copies match); it is not
    comparable with checksums HDFS computes."""
    digest = hashlib.md5(status.version.encode(), usedforsecurity=False).digest()
    raw = struct.pack(">iq", 0, 0) + digest
    return {"FileChecksum": {"algorithm": CHECKSUM_ALGORITHM, "bytes": raw.hex(), "length": 28}}


def block_locations(
    status: UfsStatus, offset: int, length: int, owner: tuple[str, str] | None
) -> dict[str, Any]:
    """The file's one block when it overlaps ``[offset, offset+length)``, located at
    ``owner`` ``(host, host:port)``, or at no host when no worker is known."""
    blocks = []
    if status.size > 0 and offset < status.size and length > 0:
        host, name = owner if owner is not None else ("", "")
        blocks.append(
            {
                "cachedHosts": [host] if host else [],
                "corrupt": False,
                "hosts": [host] if host else [],
                "length": status.size,
                "names": [name] if name else [],
                "offset": 0,
                "storageIds": [],
                "storageTypes": ["DISK"] if host else [],
                "topologyPaths": [f"/default-rack/{name}"] if name else [],
            }
        )
    return {"BlockLocations": {"BlockLocation": blocks}}


def server_defaults() -> dict[str, Any]:
    """``FsServerDefaults`` as an HDFS NameNode answers with its defaults, but for
    ``trashInterval`` 0: the worker keeps no trash, so ``hadoop fs -rm`` deletes at once, as
    it does against a NameNode with trash off (``checksumType`` 2 is CRC32C)."""
    return {
        "FsServerDefaults": {
            "blockSize": BLOCK_SIZE,
            "bytesPerChecksum": 512,
            "writePacketSize": 64 << 10,
            "replication": 1,
            "fileBufferSize": 4096,
            "encryptDataTransfer": False,
            "trashInterval": 0,
            "checksumType": 2,
            "keyProviderUri": "",
            "defaultStoragePolicyId": 7,
        }
    }


def fs_status() -> dict[str, Any]:
    """``FsStatus`` of a store with no capacity to report, as Hadoop's ``FileSystem`` answers
    for one (S3A's too): unbounded capacity and space left, nothing used."""
    unbounded = (1 << 63) - 1
    return {"FsStatus": {"capacity": unbounded, "used": 0, "remaining": unbounded}}


def path_answer(path: str) -> dict[str, Any]:
    return {"Path": path}


def boolean(value: bool) -> dict[str, Any]:
    return {"boolean": value}
