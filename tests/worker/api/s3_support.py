"""The S3 endpoint over a real service, in process: an httpx client whose requests arrive on
the S3 port of the worker's app (``worker.api.s3.routing.on_port``); the fixtures ``s3`` and
``s3_service`` are in this directory's conftest."""

import hashlib
from typing import Any

import boto3
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials

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


def signed(method: str, path: str, key_id: str, secret: str, body: bytes = b"") -> dict[str, str]:
    """The headers botocore's SigV4 signer gives a request to ``path`` on the S3 port, as an S3
    client sends them (a real signature, whichever verifier checks it)."""
    request = AWSRequest(method=method, url=f"http://worker:{PORT}{path}", data=body)
    request.headers["x-amz-content-sha256"] = hashlib.sha256(body).hexdigest()
    S3SigV4Auth(Credentials(key_id, secret), "s3", "us-east-1").add_auth(request)
    return dict(request.headers.items())


def presigned(path: str, key_id: str, secret: str) -> str:
    """A presigned GET URL of ``path`` (its query carries the signature)."""
    client = boto3.client("s3", endpoint_url=f"http://worker:{PORT}", region_name="us-east-1",
                          aws_access_key_id=key_id, aws_secret_access_key=secret,
                          config=Config(signature_version="s3v4"))  # fmt: skip
    bucket, _, key = path.lstrip("/").partition("/")
    url: str = client.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": key})
    return url.removeprefix(f"http://worker:{PORT}")
