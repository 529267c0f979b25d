"""A real worker process serving the S3 endpoint over SeaweedFS, and clients for it: boto3 at
its defaults (its checksums and aws-chunked bodies included) and the aws CLI."""

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3

from tests.integration.conftest import BUCKET
from tests.integration.harness import WorkerProcess
from worker.devlab.local.s3 import ACCESS_KEY, SECRET_KEY, LocalS3, free_port

KEY_ID = "dora-s3-key"
SECRET = "dora-s3-secret-value"
AWS = str(Path(sys.executable).with_name("aws"))


@dataclass
class Endpoint:
    """The worker, its S3 endpoint's URL, and the test's own prefix (a key, no bucket)."""

    worker: WorkerProcess
    url: str
    prefix: str

    def client(self, key_id: str = KEY_ID, secret: str = SECRET, **config: Any) -> Any:
        """A boto3 S3 client of this endpoint, at boto3's defaults."""
        return boto3.client(
            "s3",
            endpoint_url=self.url,
            aws_access_key_id=key_id,
            aws_secret_access_key=secret,
            region_name="us-east-1",
            **config,
        )

    def aws(self, *args: str, input: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
        """The aws CLI against this endpoint, with only the endpoint's key pair."""
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": os.environ.get("HOME", "/tmp"),
            "AWS_ACCESS_KEY_ID": KEY_ID,
            "AWS_SECRET_ACCESS_KEY": SECRET,
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_CONFIG_FILE": "/dev/null",
            "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
        }
        return subprocess.run([AWS, "--endpoint-url", self.url, *args], input=input,
                              capture_output=True, env=env, timeout=120, check=False)  # fmt: skip


def store_client(seaweedfs: LocalS3) -> Any:
    """boto3 straight to the store, to compare with."""
    return boto3.client("s3", endpoint_url=seaweedfs.endpoint, aws_access_key_id=ACCESS_KEY,
                        aws_secret_access_key=SECRET_KEY, region_name="us-east-1")  # fmt: skip


def start_worker(work: Path, seaweedfs: LocalS3, *defines: str) -> tuple[WorkerProcess, str]:
    """A worker serving bucket ``itest`` of ``seaweedfs`` and a local ``scratch`` bucket on
    its S3 endpoint, with one key pair (and ``defines``); the worker and the endpoint's URL."""
    scratch = work / "scratch"
    scratch.mkdir()
    port = free_port()
    worker = WorkerProcess(
        work,
        f"dora.worker.ufs.roots=s3://{BUCKET},file://{scratch}",
        *seaweedfs.storage_defines(),
        f"dora.worker.s3.port={port}",
        f"dora.worker.s3.buckets=scratch=file://{scratch}",
        f"dora.worker.s3.access.key.id={KEY_ID}",
        f"dora.worker.s3.secret.access.key={SECRET}",
        "dora.worker.http.access.log=true",
        *defines,
    )
    return worker, f"http://127.0.0.1:{port}"


def stop_worker(worker: WorkerProcess, work: Path) -> None:
    """Stop ``worker``; no error it answered was a bug, whatever the clients sent."""
    worker.stop()
    log = (work / "worker.log").read_text()
    assert "Traceback" not in log, log
