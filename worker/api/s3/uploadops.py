"""The multipart operations, each served the way its bucket's store allows: as the store's own
upload where it has them (an S3 store: ``worker.api.s3.storeparts``), else with the parts kept
on the worker's disk (``worker.api.s3.multipart``). A bucket's store decides, so every request
of one upload is served the same way."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.responses import Response

from ufs.stores import Uploads
from worker.api.s3 import multipart, storeparts
from worker.api.s3.call import S3Call

Handler = Callable[[S3Call], Awaitable[Response]]


def _either(
    on_disk: Handler, on_store: Callable[[S3Call, Uploads], Awaitable[Response]]
) -> Handler:
    """The operation served by ``on_store`` with the bucket's store uploads where it has them,
    else by ``on_disk``."""

    async def serve(call: S3Call) -> Response:
        store = storeparts.uploads_of(call)
        return await (on_disk(call) if store is None else on_store(call, store))

    return serve


create = _either(multipart.create, storeparts.create)
upload_part = _either(multipart.upload_part, storeparts.upload_part)
upload_part_copy = _either(multipart.upload_part_copy, storeparts.upload_part_copy)
complete = _either(multipart.complete, storeparts.complete)
abort = _either(multipart.abort, storeparts.abort)
list_parts = _either(multipart.list_parts, storeparts.list_parts)
list_uploads = _either(multipart.list_uploads, storeparts.list_uploads)
