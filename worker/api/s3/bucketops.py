"""The bucket-level operations that need no listing: ListBuckets, HeadBucket,
GetBucketLocation."""

from __future__ import annotations

from starlette.responses import Response

from worker.api.s3 import xmlbody
from worker.api.s3.call import S3Call


async def list_buckets(call: S3Call) -> Response:
    endpoint = call.endpoint
    answer = xmlbody.list_buckets(endpoint.buckets, endpoint.started_ns)
    return Response(answer, 200, media_type=xmlbody.MEDIA_TYPE)


async def head_bucket(call: S3Call) -> Response:
    call.endpoint.buckets.root(call.named_bucket())
    return Response(b"", 200, {"x-amz-bucket-region": "us-east-1"})


async def bucket_location(call: S3Call) -> Response:
    call.endpoint.buckets.root(call.named_bucket())
    return Response(xmlbody.location(), 200, media_type=xmlbody.MEDIA_TYPE)
