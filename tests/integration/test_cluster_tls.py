"""etcd over TLS with client certificates (a real etcd started with ``--cert-file``,
``--key-file``, ``--trusted-ca-file`` and ``--client-cert-auth``), and an HTTPS worker that
registers there with its scheme, which a client following etcd reaches and verifies."""

from __future__ import annotations

import ssl
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from config import load_config
from tests.integration.tls_support import TlsWorker, tls_defines
from tests.worker.tls.certs import CA, Pair
from worker.client.filesystem import DoraFileSystem
from worker.cluster import layout
from worker.cluster.etcd import Etcd, EtcdUnavailable
from worker.cluster.localetcd import LocalEtcd
from worker.keys import build_registry
from worker.tls.client import PemFiles

pytestmark = [pytest.mark.integration, pytest.mark.slow]


class TlsEtcd(LocalEtcd):
    """A LocalEtcd that serves clients over TLS and requires their certificates."""

    def __init__(self, data_dir: Path, tls_ca: CA, server: Pair, client: Pair) -> None:
        super().__init__(data_dir)
        self.tls_ca, self.server, self.client = tls_ca, server, client

    @property
    def endpoint(self) -> str:
        return f"https://127.0.0.1:{self.client_port}"

    def _launch(
        self,
        args: list[str],
        timeout: float,
        env: dict[str, str] | None = None,
        append: bool = False,
    ) -> None:
        secured = [
            f"--cert-file={self.server.cert}",
            f"--key-file={self.server.key}",
            f"--trusted-ca-file={self.tls_ca.file}",
            "--client-cert-auth",
        ]
        super()._launch([*args, *secured], timeout, env, append)

    def _ready(self) -> bool:
        context = ssl.create_default_context(cafile=str(self.tls_ca.file))
        context.load_cert_chain(str(self.client.cert), str(self.client.key))
        try:
            with urllib.request.urlopen(self.endpoint + "/health", timeout=1, context=context) as a:
                return b'"true"' in a.read()
        except (urllib.error.URLError, OSError):
            return False


@pytest.fixture(scope="module")
def client_pair(tls_ca: CA) -> Pair:
    return tls_ca.issue("etcd-client", ("dora",), client=True)


@pytest.fixture(scope="module")
def etcd_server(
    tls_ca: CA, client_pair: Pair, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TlsEtcd]:
    pair = tls_ca.issue("etcd", both=True)
    server = TlsEtcd(tmp_path_factory.mktemp("etcd"), tls_ca, pair, client_pair)
    server.start()
    yield server
    server.stop()


def etcd_defines(server: TlsEtcd) -> list[str]:
    return [
        f"dora.cluster.etcd.endpoints={server.endpoint}",
        f"dora.cluster.etcd.tls.ca.file={server.tls_ca.file}",
        f"dora.cluster.etcd.tls.cert.file={server.client.cert}",
        f"dora.cluster.etcd.tls.key.file={server.client.key}",
    ]


def test_etcd_takes_calls_only_with_the_client_certificate(
    etcd_server: TlsEtcd, client_pair: Pair, tls_ca: CA
) -> None:
    trusted = PemFiles(str(tls_ca.file), str(client_pair.cert), str(client_pair.key))
    etcd = Etcd([etcd_server.endpoint], 2.0, tls=trusted)
    try:
        key = f"/tls-test/{uuid.uuid4().hex}"
        etcd.put(key, b"over tls")
        found = etcd.get(key)
        assert found is not None and found.value == b"over tls"
    finally:
        etcd.close()
    without = Etcd([etcd_server.endpoint], 2.0, tls=PemFiles(str(tls_ca.file)))
    with pytest.raises(EtcdUnavailable, match=etcd_server.endpoint):
        without.revision("/dora")
    without.close()


def test_a_client_following_etcd_reaches_an_https_worker_by_its_scheme(
    etcd_server: TlsEtcd, tls_ca: CA, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "f.txt").write_bytes(b"found through etcd")
    cluster = f"c-{uuid.uuid4().hex[:8]}"
    cluster_defines = [*etcd_defines(etcd_server), f"dora.cluster.name={cluster}"]
    worker = TlsWorker(
        tmp_path / "w", f"dora.worker.ufs.roots=file://{data}",
        *tls_defines(tls_ca.issue("server")), *cluster_defines,
    )  # fmt: skip
    try:
        pair = etcd_server.client
        trusted = PemFiles(str(tls_ca.file), str(pair.cert), str(pair.key))
        etcd = Etcd([etcd_server.endpoint], 2.0, tls=trusted)
        _, entries = etcd.get_prefix(layout.live_prefix(cluster))
        etcd.close()
        assert [layout.WorkerInfo.decode(e.value).url for e in entries] == [worker.url()]
        config = load_config(
            build_registry(), environ={},
            defines=[*cluster_defines, "dora.user.workers=127.0.0.1:1"],
        )  # fmt: skip
        fs = DoraFileSystem(
            config=config, tls_ca_file=str(tls_ca.file), fallback_to_ufs=False,
            skip_instance_cache=True,
        )  # fmt: skip
        assert fs.cat_file(f"file://{data}/f.txt") == b"found through etcd"
    finally:
        worker.stop()
