"""The S3 endpoint over a real service, in process: an httpx client whose requests arrive on
the S3 port of the worker's app (``worker.api.s3.routing.on_port``); the fixtures ``s3`` and
``s3_service`` are in this directory's conftest."""

from typing import Any

from tests.worker.conftest import Api
from worker.api.app import create_app
from worker.api.s3.routing import on_port
from worker.service import WorkerService

PORT = 9000
BUCKET = "data"


class S3Api(Api):
    """Requests to ``http://worker:9000`` (the S3 port), path style unless a Host is given."""

    def __init__(self, service: WorkerService, domain: str | None = None) -> None:
        super().__init__(service, app=on_port(create_app(service), PORT, domain))
        self.client.base_url = f"http://worker:{PORT}"  # type: ignore[assignment]

    def put(self, path: str, content: bytes = b"", **kwargs: Any) -> Any:
        return self.request("PUT", path, content=content, **kwargs)
