"""The UFS contract on a local directory and on fsspec's memory filesystem, plus retries."""

import uuid
from pathlib import Path

import fsspec
import pytest

from tests.ufs.contract import UfsContract, WriteOutside
from ufs.adapter import Ufs, UfsOptions
from ufs.errors import UfsError, UfsUnavailable
from worker.locals3 import free_port


class TestLocalDirectory(UfsContract):
    @pytest.fixture
    def ufs(self) -> Ufs:
        return Ufs()

    @pytest.fixture
    def root(self, tmp_path: Path) -> str:
        return f"file://{tmp_path}"

    @pytest.fixture
    def write_outside(self) -> WriteOutside:
        def write(uri: str, data: bytes) -> None:
            path = Path(uri.removeprefix("file://"))
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)

        return write


class TestMemory(UfsContract):
    @pytest.fixture
    def ufs(self) -> Ufs:
        return Ufs()

    @pytest.fixture
    def root(self) -> str:
        return f"memory://contract-{uuid.uuid4().hex}"

    @pytest.fixture
    def write_outside(self) -> WriteOutside:
        def write(uri: str, data: bytes) -> None:
            fsspec.filesystem("memory").pipe_file(uri, data)

        return write


def test_unreachable_s3_is_retried_then_unavailable() -> None:
    sleeps: list[float] = []
    options = UfsOptions(
        s3_endpoint=f"http://127.0.0.1:{free_port()}",
        s3_access_key_id="k",
        s3_secret_access_key="s",
        retry_attempts=3,
        retry_base_delay_ms=50,
        connect_timeout_ms=500,
    )
    ufs = Ufs(options, sleep=sleeps.append)
    with pytest.raises(UfsUnavailable, match="UFS unavailable during status s3://b/k") as raised:
        ufs.status("s3://b/k")
    assert sleeps == [0.05, 0.1]
    assert raised.value.__cause__ is not None


def test_unknown_scheme_is_a_clear_error() -> None:
    with pytest.raises(UfsError, match="cannot use scheme 'nosuchfs'"):
        Ufs().status("nosuchfs://x/y")
