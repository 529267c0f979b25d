"""Authentication of the S3 endpoint: AWS Signature V4 in headers and presigned URLs, and the
check of request bodies (payload hashes, ``Content-MD5``, ``x-amz-checksum-*``, aws-chunked
frames with their chunk and trailer signatures).

The S3 surface calls :meth:`Verifier.verify` once per request, then streams the body through
the returned :class:`BodyCheck` and commits a write only after :meth:`BodyCheck.finish`.
Every refusal is an :class:`S3AuthError` carrying S3's error code and HTTP status.
"""

from worker.api.s3auth.body import BodyCheck
from worker.api.s3auth.errors import S3AuthError
from worker.api.s3auth.verifier import AccessKey, Principal, Verified, Verifier

__all__ = ["AccessKey", "BodyCheck", "Principal", "S3AuthError", "Verified", "Verifier"]
