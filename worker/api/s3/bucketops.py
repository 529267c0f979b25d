"""The bucket-level operations that need no listing: ListBuckets, HeadBucket,
GetBucketLocation, CreateBucket and DeleteBucket.

The configured buckets are the worker's to answer for; a whole store's (a mount root
``s3://``) are the store's: ListBuckets adds them, HeadBucket asks the store, and CreateBucket
and DeleteBucket pass through to it with its answers (BucketAlreadyExists, BucketNotEmpty,
...). A bucket made or removed drops whatever the cache holds under it (negative entries
of keys looked up before it existed, statuses and pages of what it held), on this worker
and, through the cluster's feed, on the others."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from ufs.errors import UfsNotFound
from ufs.stores import Buckets as StoreBuckets
from worker.api.s3 import xmlbody
from worker.api.s3.buckets import valid_name
from worker.api.s3.call import S3Call
from worker.api.s3.errors import S3Error, no_such_bucket, not_implemented
from worker.common.deadlines import TIMEOUT_HEADER, request_deadline

CREATE_BODY_LIMIT = 64 << 10
"""CreateBucketConfiguration is a few lines of XML."""


def _store(call: S3Call) -> StoreBuckets | None:
    """The whole store's buckets, if a mount root is a whole store that has them."""
    store = call.endpoint.buckets.store
    return None if store is None else call.service.ufs.buckets(store)


async def list_buckets(call: S3Call) -> Response:
    endpoint = call.endpoint
    named = {name: endpoint.started_ns for name in endpoint.buckets}
    store = _store(call)
    if store is not None:
        deadline = request_deadline(call.request.headers.get(TIMEOUT_HEADER))
        for bucket in await run_in_threadpool(store.list, deadline):
            named.setdefault(bucket.name, bucket.created_ns)
    answer = xmlbody.list_buckets(sorted(named.items()))
    return Response(answer, 200, media_type=xmlbody.MEDIA_TYPE)


async def _exists(call: S3Call) -> None:
    """NoSuchBucket unless the request's bucket is configured or its store has it."""
    bucket = call.named_bucket()
    call.endpoint.buckets.root(bucket)
    if bucket in call.endpoint.buckets.roots:
        return
    try:
        status = await run_in_threadpool(call.service.status, call.context(call.uri()))
    except UfsNotFound:
        raise no_such_bucket(bucket) from None
    if not status.is_dir:
        raise no_such_bucket(bucket)


def in_existing_bucket(
    operation: Callable[[S3Call], Awaitable[Response]],
) -> Callable[[S3Call], Awaitable[Response]]:
    """``operation`` answered only in a bucket that exists (a listing of a whole store's
    bucket that is not there is NoSuchBucket, not an empty listing)."""

    async def checked(call: S3Call) -> Response:
        await _exists(call)
        return await operation(call)

    return checked


async def head_bucket(call: S3Call) -> Response:
    await _exists(call)
    return Response(b"", 200, {"x-amz-bucket-region": "us-east-1"})


async def bucket_location(call: S3Call) -> Response:
    await _exists(call)
    return Response(xmlbody.location(), 200, media_type=xmlbody.MEDIA_TYPE)


def _passed_through(call: S3Call, operation: str) -> StoreBuckets:
    """The store a bucket operation passes through to; NotImplemented for a configured bucket
    that is not the store's own (a local directory, a prefix), or without a whole store."""
    bucket = call.named_bucket()
    store = _store(call)
    if store is None or not call.endpoint.buckets.in_store(bucket):
        raise not_implemented(f"{operation} of a bucket that is not a whole store's")
    return store


async def create_bucket(call: S3Call) -> Response:
    """A new bucket of the whole store (the body's LocationConstraint is not used: the store
    is where the worker's S3 keys say)."""
    bucket = call.named_bucket()
    if not valid_name(bucket):
        raise S3Error("InvalidBucketName", 400, f"{bucket!r} is not a valid bucket name")
    await call.small(CREATE_BODY_LIMIT)
    if bucket in call.endpoint.buckets.roots and not call.endpoint.buckets.in_store(bucket):
        raise S3Error("BucketAlreadyOwnedByYou", 409, f"the bucket {bucket!r} is configured")
    store = _passed_through(call, "CreateBucket")
    context = call.context(call.uri())

    def work() -> None:
        with call.service.audit.mutation("createBucket", context):
            store.create(bucket, context.deadline)
        call.service.invalidate(context, recursive=True)

    await run_in_threadpool(work)
    return Response(b"", 200, {"Location": f"/{bucket}"})


async def delete_bucket(call: S3Call) -> Response:
    """The whole store's bucket removed (the store refuses one that is not empty)."""
    bucket = call.named_bucket()
    store = _passed_through(call, "DeleteBucket")
    context = call.context(call.uri())

    def work() -> None:
        with call.service.audit.mutation("deleteBucket", context):
            store.delete(bucket, context.deadline)
        call.service.invalidate(context, recursive=True)

    await run_in_threadpool(work)
    return Response(b"", 204)
