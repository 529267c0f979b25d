"""The multipart operations, each served the way its bucket's store allows: as the store's own
upload where it has them (an S3 store: ``worker.api.s3.storeparts``), else with the parts kept
on the worker's disk (``worker.api.s3.multipart``). A bucket's store decides, so every request
of one upload is served the same way."""

from __future__ import annotations

from starlette.responses import Response

from worker.api.s3 import multipart, storeparts
from worker.api.s3.call import S3Call


async def create(call: S3Call) -> Response:
    store = storeparts.uploads_of(call)
    return await (multipart.create(call) if store is None else storeparts.create(call, store))


async def upload_part(call: S3Call) -> Response:
    store = storeparts.uploads_of(call)
    if store is None:
        return await multipart.upload_part(call)
    return await storeparts.upload_part(call, store)


async def upload_part_copy(call: S3Call) -> Response:
    store = storeparts.uploads_of(call)
    if store is None:
        return await multipart.upload_part_copy(call)
    return await storeparts.upload_part_copy(call, store)


async def complete(call: S3Call) -> Response:
    store = storeparts.uploads_of(call)
    return await (multipart.complete(call) if store is None else storeparts.complete(call, store))


async def abort(call: S3Call) -> Response:
    store = storeparts.uploads_of(call)
    return await (multipart.abort(call) if store is None else storeparts.abort(call, store))


async def list_parts(call: S3Call) -> Response:
    store = storeparts.uploads_of(call)
    if store is None:
        return await multipart.list_parts(call)
    return await storeparts.list_parts(call, store)


async def list_uploads(call: S3Call) -> Response:
    store = storeparts.uploads_of(call)
    if store is None:
        return await multipart.list_uploads(call)
    return await storeparts.list_uploads(call, store)
