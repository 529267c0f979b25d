"""Azure Blob Storage as a UFS kind, against Azurite (Microsoft's emulator): the UFS contract,
reads pinned to an ETag, the kind's error translation (a stopped and a frozen service), and the
invalidation chain of a worker over an ``az://`` root."""

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import adlfs
import pytest

from tests.integration.conftest import frozen
from tests.integration.ufs.azurite_support import ACCOUNT, ACCOUNT_KEY, LocalAzurite
from tests.ufs.contract import UfsContract, WriteOutside
from tests.worker.chain import TTL_DEFINES, InvalidationChain
from tests.worker.conftest import open_service
from ufs.adapter import Ufs, UfsOptions
from ufs.errors import StorageUnavailable, UfsNotFound, UfsVersionChanged
from ufs.kinds.azure import AzureOptions
from worker.service import WorkerService

pytestmark = pytest.mark.integration
CONTAINER = "itest"


@pytest.fixture(scope="module")
def azurite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalAzurite]:
    server = LocalAzurite(tmp_path_factory.mktemp("azurite")).start()
    raw(server).mkdir(CONTAINER)
    yield server
    server.stop()


def raw(server: LocalAzurite) -> Any:
    """A plain adlfs client for writing "from outside" the cache."""
    return adlfs.AzureBlobFileSystem(
        account_name=ACCOUNT,
        connection_string=(
            f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT};AccountKey={ACCOUNT_KEY};"
            f"BlobEndpoint={server.endpoint};"
        ),
        skip_instance_cache=True,
    )


def options(server: LocalAzurite, **common: int) -> UfsOptions:
    azure = AzureOptions(account_name=ACCOUNT, account_key=ACCOUNT_KEY, endpoint=server.endpoint)
    return UfsOptions(kinds=(azure,), **common)


@pytest.fixture
def az_root() -> str:
    return f"az://{CONTAINER}/{uuid.uuid4().hex}"


class TestAzurite(UfsContract):
    @pytest.fixture
    def ufs(self, azurite: LocalAzurite) -> Ufs:
        return Ufs(options(azurite))

    @pytest.fixture
    def root(self, az_root: str) -> str:
        return az_root

    @pytest.fixture
    def write_outside(self, azurite: LocalAzurite) -> WriteOutside:
        client = raw(azurite)

        def write(uri: str, data: bytes) -> None:
            client.pipe_file(uri.removeprefix("az://"), data)

        return write


def test_the_version_is_the_blobs_etag_and_a_pinned_read_never_mixes_versions(
    azurite: LocalAzurite, az_root: str
) -> None:
    ufs, client = Ufs(options(azurite)), raw(azurite)
    uri = f"{az_root}/pinned.bin"
    written = ufs.write(uri, b"first version")
    assert written.version == client.info(uri.removeprefix("az://"))["etag"].strip('"')
    assert ufs.read(uri, 0, 5, version=written.version) == b"first"
    client.pipe_file(uri.removeprefix("az://"), b"second version")
    with pytest.raises(UfsVersionChanged):
        ufs.read(uri, 0, 5, version=written.version)


def test_a_missing_container_is_not_found(azurite: LocalAzurite) -> None:
    with pytest.raises(UfsNotFound):
        Ufs(options(azurite)).status("az://no-such-container/k")


def test_a_stopped_service_is_unavailable(tmp_path: Path) -> None:
    server = LocalAzurite(tmp_path / "azurite").start()
    ufs = Ufs(options(server, retry_attempts=1))
    server.stop()
    with pytest.raises(StorageUnavailable):
        ufs.status(f"az://{CONTAINER}/k")


def test_a_frozen_service_is_unavailable_at_the_call_deadline(azurite: LocalAzurite) -> None:
    ufs = Ufs(options(azurite, call_deadline_ms=1500, retry_attempts=1))
    ufs.write(f"az://{CONTAINER}/frozen/a", b"a")
    with frozen(azurite), pytest.raises(StorageUnavailable, match="dora.ufs.call.deadline"):
        ufs.status(f"az://{CONTAINER}/frozen/b")


class AzureOutside:
    def __init__(self, client: Any) -> None:
        self.client = client

    def write(self, uri: str, data: bytes) -> None:
        self.client.pipe_file(uri.removeprefix("az://"), data)

    def delete(self, uri: str) -> None:
        self.client.rm_file(uri.removeprefix("az://"))


class TestAzureChain(InvalidationChain):
    @pytest.fixture
    def work(self, tmp_path: Path) -> Path:
        return tmp_path / "work"

    @pytest.fixture
    def root(self, az_root: str) -> str:
        return az_root

    @pytest.fixture
    def service(self, work: Path, azurite: LocalAzurite) -> Iterator[WorkerService]:
        service = open_service(work, f"az://{CONTAINER}", *TTL_DEFINES, *azurite.defines())
        yield service
        service.close()

    @pytest.fixture
    def outside(self, azurite: LocalAzurite) -> AzureOutside:
        return AzureOutside(raw(azurite))
