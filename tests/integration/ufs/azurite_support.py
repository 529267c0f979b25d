"""Azurite, Microsoft's Azure Storage emulator (npm's ``azurite``), as a local Blob service on a
free loopback port: the integration tests' Azure. `make azurite` installs it under
~/.cache/doracache-azurite; the tests install it there too when it is missing."""

from __future__ import annotations

import os
import urllib.error
import urllib.request
from pathlib import Path

from worker.devlab.local.s3 import free_port
from worker.devlab.local.server import LocalServer

ACCOUNT = "devstoreaccount1"
# Azurite's documented well-known development key, the same in every copy of the emulator.
ACCOUNT_KEY = (
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)
PREFIX = Path.home() / ".cache" / "doracache-azurite"


def azurite_blob() -> str:
    """The ``azurite-blob`` command `make azurite` installs under :data:`PREFIX`."""
    binary = PREFIX / "node_modules" / ".bin" / "azurite-blob"
    if not binary.exists():
        raise RuntimeError(f"Azurite is missing from {PREFIX}: run `make azurite` (npm)")
    return str(binary)


class LocalAzurite(LocalServer):
    """One Azurite Blob service on 127.0.0.1, its data under ``data_dir``; stopped by PID."""

    name = "Azurite"
    log_name = "azurite.log"

    def __init__(self, data_dir: Path) -> None:
        super().__init__(data_dir)
        self.port = free_port()

    @property
    def endpoint(self) -> str:
        return f"http://{self.host}:{self.port}/{ACCOUNT}"

    def start(self, timeout: float = 60.0) -> LocalAzurite:
        args = [
            azurite_blob(),
            "--blobHost",
            self.host,
            "--blobPort",
            str(self.port),
            "--location",
            str(self.data_dir),
            "--skipApiVersionCheck",
            "--disableTelemetry",
        ]
        self._launch(args, timeout, {**os.environ})
        return self

    def _ready(self) -> bool:
        try:
            with urllib.request.urlopen(self.endpoint + "?comp=list", timeout=1):
                pass
        except urllib.error.HTTPError:
            pass  # it answers (an unsigned listing is refused): the service is up
        except OSError:
            return False
        return True

    def defines(self) -> list[str]:
        """``-D`` settings that point the UFS adapter at this emulator."""
        return [
            f"dora.ufs.azure.endpoint={self.endpoint}",
            f"dora.ufs.azure.account.name={ACCOUNT}",
            f"dora.ufs.azure.account.key={ACCOUNT_KEY}",
        ]
