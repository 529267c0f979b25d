"""Property keys of the S3 endpoint (``worker.api.s3``): declarations only."""

from __future__ import annotations

from typing import Any

from config.keys import KeyType, PropertyKey

PORT: PropertyKey[int | None] = PropertyKey(
    "dora.worker.s3.port",
    KeyType.INT,
    None,
    "Also serve S3's REST API on this port (on the bind host; HTTPS when the worker's TLS is "
    "on). Empty: no S3 endpoint (the default: it answers with the worker's own access to the "
    "stores, so an operator opens it knowingly, with credentials).",
    minimum=1,
)
BUCKETS: PropertyKey[list[str]] = PropertyKey(
    "dora.worker.s3.buckets",
    KeyType.LIST,
    "",
    "More buckets of the S3 endpoint, as name=URI pairs (scratch=file:///data/scratch); each "
    "URI must be a mount root or lie under one. Every s3://NAME mount root is bucket NAME "
    "without being named here, and a mount root s3:// (the whole store) makes each of the "
    "store's buckets one.",
)
DOMAIN: PropertyKey[str | None] = PropertyKey(
    "dora.worker.s3.domain",
    KeyType.STRING,
    None,
    "The endpoint's domain for virtual-hosted-style requests (BUCKET.DOMAIN); empty: "
    "path style only (path style is always served).",
)
ACCESS_KEY_ID: PropertyKey[list[str]] = PropertyKey(
    "dora.worker.s3.access.key.id",
    KeyType.LIST,
    "",
    "Access key ids S3 clients sign requests with, comma separated; the n-th pairs with the "
    "n-th secret of dora.worker.s3.secret.access.key.",
)
SECRET_ACCESS_KEY: PropertyKey[list[str]] = PropertyKey(
    "dora.worker.s3.secret.access.key",
    KeyType.LIST,
    "",
    "Secret access keys of the S3 endpoint, comma separated, one per access key id, in the "
    "same order.",
    secret=True,
)
ANONYMOUS: PropertyKey[bool] = PropertyKey(
    "dora.worker.s3.anonymous",
    KeyType.BOOL,
    "false",
    "Serve unsigned S3 requests too (as an anonymous caller). Off by default: only requests "
    "signed with a configured key pair are served.",
)

UPLOAD_EXPIRY: PropertyKey[int] = PropertyKey(
    "dora.worker.s3.multipart.expiry",
    KeyType.DURATION,
    "7d",
    "A multipart upload kept on the worker's disk (a bucket whose store has no multipart "
    "uploads of its own: a local directory, Azure) neither completed nor aborted this long "
    "after it began is removed with its parts, when the next upload begins. An S3 store's "
    "uploads are the store's: its lifecycle rules remove abandoned ones.",
    minimum=1,
)

OWNER_TIMEOUT: PropertyKey[int] = PropertyKey(
    "dora.worker.s3.owner.timeout",
    KeyType.DURATION,
    "1s",
    "In a cluster, how long a worker tries to connect to the worker that owns a key before it "
    "serves the key itself, re-checked with the store (the owner is down or cut off).",
    minimum=1,
)

KEYS: list[PropertyKey[Any]] = [
    PORT, BUCKETS, DOMAIN, ACCESS_KEY_ID, SECRET_ACCESS_KEY, ANONYMOUS, UPLOAD_EXPIRY,
    OWNER_TIMEOUT,
]  # fmt: skip
