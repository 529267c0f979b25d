"""etcd over TLS with client certificates (a real etcd started with ``--cert-file``,
``--key-file``, ``--trusted-ca-file`` and ``--client-cert-auth``), and an HTTPS worker that
registers there with its scheme, which a client following etcd reaches and verifies."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from config import load_config
from tests.integration.harness import WorkerProcess
from tests.integration.tls.tls_support import tls_defines
from tests.worker.tls.certs import CA, Pair
from worker.client.filesystem import DoraFileSystem
from worker.cluster import layout
from worker.cluster.etcd import Etcd, EtcdUnavailable
from worker.common.tls import PemFiles
from worker.devlab.local.etcd import EtcdTls, LocalEtcd
from worker.keys import build_registry

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(scope="module")
def client_pair(tls_ca: CA) -> Pair:
    return tls_ca.issue("etcd-client", ("dora",), client=True)


@pytest.fixture(scope="module")
def etcd_server(
    tls_ca: CA, client_pair: Pair, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalEtcd]:
    pair = tls_ca.issue("etcd", both=True)
    tls = EtcdTls(pair.cert, pair.key, tls_ca.file, client_pair.cert, client_pair.key)
    server = LocalEtcd(tmp_path_factory.mktemp("etcd"), tls=tls)
    server.start()
    yield server
    server.stop()


def etcd_defines(server: LocalEtcd) -> list[str]:
    assert server.tls is not None
    return [
        f"dora.cluster.etcd.endpoints={server.endpoint}",
        f"dora.cluster.etcd.tls.ca.file={server.tls.ca}",
        f"dora.cluster.etcd.tls.cert.file={server.tls.client_cert}",
        f"dora.cluster.etcd.tls.key.file={server.tls.client_key}",
    ]


def test_etcd_takes_calls_only_with_the_client_certificate(
    etcd_server: LocalEtcd, client_pair: Pair, tls_ca: CA
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
    etcd_server: LocalEtcd, tls_ca: CA, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "f.txt").write_bytes(b"found through etcd")
    cluster = f"c-{uuid.uuid4().hex[:8]}"
    cluster_defines = [*etcd_defines(etcd_server), f"dora.cluster.name={cluster}"]
    worker = WorkerProcess(
        tmp_path / "w", f"dora.worker.ufs.roots=file://{data}",
        *tls_defines(tls_ca.issue("server")), *cluster_defines,
    )  # fmt: skip
    try:
        assert etcd_server.tls is not None
        pair = etcd_server.tls
        trusted = PemFiles(str(tls_ca.file), str(pair.client_cert), str(pair.client_key))
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
