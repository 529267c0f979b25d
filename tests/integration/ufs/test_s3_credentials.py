"""What the README promises about S3 credentials: with the key id and secret unset, the worker
finds them the way every AWS tool does (environment, then ~/.aws/credentials), on SeaweedFS,
which refuses wrong credentials."""

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import s3fs

from tests.integration.conftest import BUCKET
from tests.worker.conftest import open_service
from ufs.errors import UfsPermissionDenied
from worker.devlab.local.s3 import ACCESS_KEY, SECRET_KEY, LocalS3
from worker.service import WorkerService

AWS_VARIABLES = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                 "AWS_PROFILE", "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE")  # fmt: skip


@pytest.fixture
def no_aws_setup(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A home with no ~/.aws and no AWS_* variables; returns the home."""
    for name in AWS_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # no instance metadata to ask
    return home


@pytest.fixture
def keyless_worker(
    tmp_path: Path, seaweedfs: LocalS3, s3_raw: s3fs.S3FileSystem
) -> Iterator[Callable[[], WorkerService]]:
    """Opens a worker over the bucket with only the endpoint set: no key id, no secret."""
    s3_raw.pipe(f"{BUCKET}/creds/hello.txt", b"hello")
    opened: list[WorkerService] = []

    def make() -> WorkerService:
        service = open_service(
            tmp_path / f"work{len(opened)}",
            f"s3://{BUCKET}",
            f"dora.ufs.s3.endpoint={seaweedfs.endpoint}",
            # What is tested is where the keys come from, not how fast a loaded machine
            # builds the first S3 session: a deadline that a busy CI run cannot reach.
            "dora.ufs.call.deadline=60s",
        )
        opened.append(service)
        return service

    yield make
    for service in opened:
        service.close()


def read(service: WorkerService) -> bytes:
    return b"".join(service.read(service.request(f"s3://{BUCKET}/creds/hello.txt", 0)).chunks)


def test_credentials_from_the_environment(
    no_aws_setup: Path,
    keyless_worker: Callable[[], WorkerService],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
    with pytest.raises(UfsPermissionDenied):
        read(keyless_worker())  # SeaweedFS checks: the credentials really are used
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    assert read(keyless_worker()) == b"hello"


def test_credentials_from_the_aws_credentials_file(
    no_aws_setup: Path, keyless_worker: Callable[[], WorkerService]
) -> None:
    (no_aws_setup / ".aws").mkdir()
    credentials = no_aws_setup / ".aws" / "credentials"
    credentials.write_text(
        f"[default]\naws_access_key_id = {ACCESS_KEY}\naws_secret_access_key = {SECRET_KEY}\n"
    )
    credentials.chmod(0o600)
    assert read(keyless_worker()) == b"hello"
