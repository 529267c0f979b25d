"""A real moto server (S3, SQS, SNS in one process, ``moto_server`` from moto[server]) on a
free loopback port, for the SQS change-feed tests; stopped by PID."""

import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Self

import boto3

from worker.devlab.local.s3 import free_port
from worker.devlab.local.server import LocalServer

REGION = "us-east-1"
KEY = "testing"


class LocalMoto(LocalServer):
    name = "moto"
    log_name = "moto.log"

    def __init__(self, data_dir: Path) -> None:
        super().__init__(data_dir)
        self.port = free_port()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60.0) -> Self:
        binary = str(Path(sys.executable).with_name("moto_server"))
        self._launch([binary, "-H", "127.0.0.1", "-p", str(self.port)], timeout)
        return self

    def _ready(self) -> bool:
        try:
            with urllib.request.urlopen(self.endpoint + "/moto-api/", timeout=1):
                return True
        except urllib.error.HTTPError:
            return True
        except OSError:
            return False

    def client(self, service: str) -> Any:
        return boto3.client(
            service,
            endpoint_url=self.endpoint,
            region_name=REGION,
            aws_access_key_id=KEY,
            aws_secret_access_key=KEY,
        )

    def storage_defines(self) -> list[str]:
        """``-D`` settings that point the UFS adapter (and a queue named by name) here."""
        return [
            f"dora.ufs.s3.endpoint={self.endpoint}",
            f"dora.ufs.s3.region={REGION}",
            f"dora.ufs.s3.access.key.id={KEY}",
            f"dora.ufs.s3.secret.access.key={KEY}",
        ]
