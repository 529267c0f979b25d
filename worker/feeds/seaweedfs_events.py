"""What one SeaweedFS filer metadata event means for S3 objects.

The filer reports entries by filer path (``/buckets/<bucket>/<key>``); its S3 gateway keeps
more under a bucket than objects: in-progress multipart uploads under ``<bucket>/.uploads/``
(not objects until completed, when the object's own entry is created: ignored), and, in a
versioned bucket, the versions of ``<key>`` under ``<key>.versions/`` (folded into ``<key>``,
whose latest version may have changed, with no version named).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from dataclasses import replace

from worker.feeds.change import Change
from worker.feeds.filer_pb.seaweedfs_filer_pb2 import Entry, SubscribeMetadataResponse

# Where the S3 gateway keeps an object's ETag (quoted or not) when it is not the content MD5.
_ETAG_KEY = "Seaweed-X-Amz-ETag"
_UPLOADS = ".uploads"
_VERSIONS = ".versions"


def changes(response: SubscribeMetadataResponse, buckets: str, prefix: str) -> list[Change]:
    """The changes to ``s3://`` objects one event names: ``buckets`` is the filer's buckets
    directory, ``prefix`` the filer path watched (a path under it matches only whole
    segments: ``/buckets/evt`` does not match bucket ``evt-ver``). Each change carries the
    event's time (``ts_ns``, absent from a filer webhook's message)."""
    event = response.event_notification
    old, new = event.old_entry, event.new_entry
    old_path = _join(response.directory, old.name) if old.name else None
    new_path = _join(event.new_parent_path or response.directory, new.name) if new.name else None
    found: list[Change] = []
    if old_path is not None and old_path != new_path:
        found += _change(old_path, old, buckets, prefix, gone=True)
    if new_path is not None:
        found += _change(new_path, new, buckets, prefix, gone=False)
    at_ms = response.ts_ns // 1_000_000
    return [replace(change, at_ms=at_ms) for change in found] if at_ms > 0 else found


def _join(directory: str, name: str) -> str:
    return f"{directory.rstrip('/')}/{name}"


def _change(path: str, entry: Entry, buckets: str, prefix: str, gone: bool) -> list[Change]:
    if not (_under(path, prefix) and _under(path, buckets)) or path == buckets:
        return []
    bucket, _, key = path[len(buckets) + 1 :].partition("/")
    if not key:
        # A bucket: its creation changes nothing cached; its removal, everything under it.
        return [Change(f"s3://{bucket}", deleted=True, prefix=True)] if gone else []
    segments = key.split("/")
    if segments[0] == _UPLOADS:
        return []
    for depth, segment in enumerate(segments):
        if segment.endswith(_VERSIONS) and len(segment) > len(_VERSIONS):
            folded = "/".join([*segments[:depth], segment.removesuffix(_VERSIONS)])
            return [Change(f"s3://{bucket}/{folded}")]
    uri = f"s3://{bucket}/{key}"
    if entry.is_directory:
        # A new directory names no object; one removed or renamed takes its objects with it.
        return [Change(uri, deleted=True, prefix=True)] if gone else []
    if gone:
        return [Change(uri, deleted=True)]
    return [Change(uri, etag(entry))]


def _under(path: str, prefix: str) -> bool:
    return path == prefix or path.startswith(prefix.rstrip("/") + "/")


def etag(entry: Entry) -> str:
    """The ETag the S3 gateway answers for ``entry`` (unquoted), as SeaweedFS computes it:
    the stored one, else the content MD5, else from the chunks' MD5s ("" if none can be
    computed: the change then names no version)."""
    stored = entry.extended.get(_ETAG_KEY)
    if stored:
        return stored.decode("utf-8", "replace").strip('"')
    if entry.attributes.md5:
        return entry.attributes.md5.hex()
    digests = [_md5_bytes(chunk.e_tag) for chunk in entry.chunks]
    known = [digest for digest in digests if digest is not None]
    if not known or len(known) != len(digests):
        return ""
    if len(known) == 1:
        return known[0].hex()
    return f"{hashlib.md5(b''.join(known)).hexdigest()}-{len(known)}"


def _md5_bytes(text: str) -> bytes | None:
    """A chunk's ETag (base64 of its MD5 in current filers, hex in old ones) as bytes."""
    try:
        raw = base64.b64decode(text, validate=True)
        if len(raw) == 16:
            return raw
    except binascii.Error:
        pass
    try:
        raw = bytes.fromhex(text)
    except ValueError:
        return None
    return raw if len(raw) == 16 else None
