"""A real worker process over HTTPS: every surface, the dora clients (fsspec, ``dora fs``),
refusals that name the worker and the reason (unknown CA, expired, another host's name), mutual
TLS (no client certificate: 401 naming the key; one from another CA or expired: a refusal
naming the likely reason; the chart's probe), and a certificate or client CA replaced under a
running worker."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.integration.harness import DORA, WorkerProcess
from tests.integration.tls.tls_support import (
    replace,
    served_serial,
    tls_defines,
    wait_for_log,
    wait_for_serial,
)
from tests.worker.tls.certs import CA, Pair
from worker.client.errors import Unauthorized, WorkerUnavailable
from worker.client.filesystem import DoraFileSystem
from worker.common.tls import WorkerNotTrusted
from worker.spark.state import RunningWorker, answers

pytestmark = [pytest.mark.integration, pytest.mark.slow]
TOKEN = "tls-test-token"
PROBE = Path(__file__).parents[3] / "helm" / "doracache" / "files" / "probe.py"


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("data")
    (path / "a.bin").write_bytes(os.urandom(3 << 20))
    return path


def start(work: Path, data: Path, *defines: str) -> WorkerProcess:
    return WorkerProcess(work, f"dora.worker.ufs.roots=file://{data}", *defines)


@pytest.fixture(scope="module")
def worker(
    tls_ca: CA, data: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[WorkerProcess]:
    pair = tls_ca.issue("server")
    process = start(
        tmp_path_factory.mktemp("w"), data, *tls_defines(pair),
        f"dora.worker.security.token={TOKEN}",
    )  # fmt: skip
    yield process
    process.stop()


def client(tls_ca: CA, worker: WorkerProcess, **options: object) -> DoraFileSystem:
    return DoraFileSystem(
        workers=[worker.url()], token=TOKEN, tls_ca_file=str(tls_ca.file), skip_instance_cache=True,
        **options,
    )  # fmt: skip


def test_every_surface_answers_over_https(tls_ca: CA, worker: WorkerProcess, data: Path) -> None:
    uri = f"file://{data}/a.bin"
    context = ssl.create_default_context(cafile=str(tls_ca.file))
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=worker.url(), verify=context, headers=headers) as http:
        for probe in ("/healthz", "/readyz", "/metrics"):
            assert http.get(probe).status_code == 200, probe
        assert http.get("/v1/status", params={"path": uri}).json()["size"] == 3 << 20
        read = http.get("/v1/read", params={"path": uri, "offset": 5, "length": 10})
        assert read.content == (data / "a.bin").read_bytes()[5:15]
        hdfs = http.get(f"/webhdfs/v1/file{data}/a.bin", params={"op": "GETFILESTATUS"})
        assert hdfs.json()["FileStatus"]["length"] == 3 << 20
        alluxio = http.get("/v1/info", params={"path": uri})
        assert alluxio.json()[0]["mLength"] == 3 << 20
    with pytest.raises(httpx.RemoteProtocolError):  # the listener speaks only TLS
        httpx.get(f"http://127.0.0.1:{worker.port}/healthz")


def test_fsspec_client_reads_and_writes_over_https(
    tls_ca: CA, worker: WorkerProcess, data: Path
) -> None:
    fs = client(tls_ca, worker)
    expected = (data / "a.bin").read_bytes()
    assert fs.info(f"file://{data}/a.bin")["size"] == len(expected)  # the lean driver
    assert fs.cat_file(f"file://{data}/a.bin") == expected  # chunks in parallel
    assert fs.cat_file(f"file://{data}/a.bin", start=7, end=9) == expected[7:9]  # short-circuit
    fs.pipe_file(f"file://{data}/written.txt", b"over tls")  # a body: httpx
    assert fs.cat([f"file://{data}/written.txt"]) == {  # fsspec's event loop: the async driver
        f"file://{data}/written.txt": b"over tls"
    }


def test_dora_fs_reads_over_https(tls_ca: CA, worker: WorkerProcess, data: Path) -> None:
    done = subprocess.run(
        [DORA, "fs", "cat", f"file://{data}/a.bin", "--worker", worker.url(),
         f"-Ddora.user.tls.ca.file={tls_ca.file}", f"-Ddora.user.client.token={TOKEN}"],
        capture_output=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout == (data / "a.bin").read_bytes()


def test_another_ca_is_refused_with_the_worker_and_reason(
    worker: WorkerProcess, data: Path, tmp_path: Path
) -> None:
    other = CA(tmp_path / "other", "another CA")
    fs = client(other, worker, fallback_to_ufs=True)
    with pytest.raises(WorkerNotTrusted) as refused:
        fs.info(f"file://{data}/a.bin")
    assert f"worker 127.0.0.1:{worker.port}" in str(refused.value)
    assert "certificate is not trusted: unable to get local issuer certificate" in str(
        refused.value
    )


@pytest.mark.parametrize(
    ("issued", "reason"),
    [
        ({"expired": True}, "certificate has expired"),
        ({"hosts": ("elsewhere.example",)}, "mismatch, certificate is not valid for"),
    ],
)
def test_expired_or_misnamed_certificates_are_refused(
    tls_ca: CA, data: Path, tmp_path: Path, issued: dict[str, object], reason: str
) -> None:
    pair = tls_ca.issue("bad", **issued)  # type: ignore[arg-type]
    process = start(tmp_path / "w", data, *tls_defines(pair))
    try:
        fs = client(tls_ca, process)
        with pytest.raises(WorkerNotTrusted, match=reason) as refused:
            fs.cat_file(f"file://{data}/a.bin")
        assert f"worker 127.0.0.1:{process.port}" in str(refused.value)
    finally:
        process.stop()


@pytest.fixture(scope="module")
def mutual(
    tls_ca: CA, data: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[WorkerProcess, CA]]:
    """A worker that requires client certificates signed by the CA it yields with it."""
    work = tmp_path_factory.mktemp("mutual")
    clients = CA(work / "clients", "clients CA")
    server = tls_defines(tls_ca.issue("server"), clients)
    process = start(work / "w", data, *server, "dora.worker.audit.log=true")
    yield process, clients
    process.stop()


def with_cert(tls_ca: CA, worker: WorkerProcess, pair: Pair) -> DoraFileSystem:
    return client(
        tls_ca, worker, tls_cert_file=str(pair.cert), tls_key_file=str(pair.key),
        fallback_to_ufs=True,
    )  # fmt: skip


def test_mutual_tls_takes_a_signed_client(
    tls_ca: CA, mutual: tuple[WorkerProcess, CA], data: Path
) -> None:
    process, clients = mutual
    signed = clients.issue("client", ("dora-client",), client=True)
    assert with_cert(tls_ca, process, signed).info(f"file://{data}/a.bin")["size"] == 3 << 20


def test_the_audit_log_names_the_client_certificates_subject(
    tls_ca: CA, mutual: tuple[WorkerProcess, CA], data: Path
) -> None:
    process, clients = mutual
    fs = with_cert(tls_ca, process, clients.issue("auditor", ("etl-nightly",), client=True))
    uri = f"file://{data}/audited.bin"
    fs.pipe(uri, b"written over mutual TLS")
    fs.rm(uri)
    logged = process.log()
    for cmd in ("create", "delete"):
        audited = f"allowed=true\tugi=etl-nightly\tip=/127.0.0.1\tcmd={cmd}\tsrc={uri}\tdst=null"
        assert audited in logged, logged


def test_no_client_certificate_is_answered_401_naming_the_key(
    tls_ca: CA, mutual: tuple[WorkerProcess, CA], data: Path
) -> None:
    process, _ = mutual
    with pytest.raises(Unauthorized, match=f"127.0.0.1:{process.port}") as refused:
        client(tls_ca, process, fallback_to_ufs=True).info(f"file://{data}/a.bin")
    assert "no client certificate" in str(refused.value)
    assert "set dora.user.tls.cert.file and dora.user.tls.key.file" in str(refused.value)
    context = ssl.create_default_context(cafile=str(tls_ca.file))
    with httpx.Client(base_url=process.url(), verify=context) as http:
        hdfs = http.get(f"/webhdfs/v1/file{data}/a.bin", params={"op": "GETFILESTATUS"})
        healthz = http.get("/healthz")  # probes too: the chart's present the worker's pair
    assert hdfs.status_code == healthz.status_code == 401
    assert hdfs.json()["RemoteException"]["message"].startswith("no client certificate")
    assert "Traceback" not in process.log()


@pytest.mark.parametrize("wrong", ["another CA", "expired"])
def test_a_refused_client_certificate_names_the_worker_and_the_likely_reason(
    tls_ca: CA, mutual: tuple[WorkerProcess, CA], data: Path, tmp_path: Path, wrong: str
) -> None:
    process, clients = mutual
    if wrong == "expired":
        pair = clients.issue("old", ("dora-client",), client=True, expired=True)
    else:
        pair = CA(tmp_path / "stranger", "stranger CA").issue("c", ("x",), client=True)
    # With fallback on: a setup to fix is raised, not hidden behind reads from the UFS.
    with pytest.raises(WorkerNotTrusted) as refused:
        with_cert(tls_ca, process, pair).cat_file(f"file://{data}/a.bin")
    assert f"worker 127.0.0.1:{process.port}: it hung up right after the TLS handshake" in str(
        refused.value
    )
    assert f"refuses our client certificate dora.user.tls.cert.file={pair.cert}" in str(
        refused.value
    )
    assert "dora.worker.tls.client.ca.file, or expired" in str(refused.value)
    # A write is not repeated (it may have been applied), so it is not refused outright: the
    # error says so, and names the likely reason.
    with pytest.raises(WorkerUnavailable, match="refuses our client certificate"):
        with_cert(tls_ca, process, pair).pipe_file(f"file://{data}/never.txt", b"x")
    assert not (data / "never.txt").exists()


def test_the_charts_probe_presents_a_pair_under_mutual_tls(
    mutual: tuple[WorkerProcess, CA],
) -> None:
    process, clients = mutual
    pair = clients.issue("probe", client=True)
    base = [sys.executable, str(PROBE), str(process.port)]
    for path in ("/healthz", "/readyz"):
        with_pair = [*base, path, "https", str(pair.cert), str(pair.key)]
        assert subprocess.run(with_pair, capture_output=True, check=False).returncode == 0
    without = subprocess.run(
        [*base, "/healthz", "https"], capture_output=True, text=True, check=False
    )
    assert without.returncode == 1
    assert "401" in without.stderr


def test_a_replaced_client_ca_is_used_without_restart(
    tls_ca: CA, data: Path, tmp_path: Path
) -> None:
    old, new = CA(tmp_path / "old", "old clients"), CA(tmp_path / "new", "new clients")
    bundle = tmp_path / "clients.pem"
    bundle.write_bytes(old.file.read_bytes())
    process = start(
        tmp_path / "w", data, *tls_defines(tls_ca.issue("server")),
        f"dora.worker.tls.client.ca.file={bundle}", "dora.worker.tls.reload.interval=50ms",
    )  # fmt: skip
    try:
        old_client = with_cert(tls_ca, process, old.issue("c", ("x",), client=True))
        new_client = with_cert(tls_ca, process, new.issue("c", ("x",), client=True))
        assert old_client.info(f"file://{data}/a.bin")["size"] == 3 << 20
        with pytest.raises(WorkerNotTrusted):
            new_client.info(f"file://{data}/a.bin")
        temp = bundle.with_suffix(".new")
        temp.write_bytes(new.file.read_bytes())
        temp.replace(bundle)
        wait_for_log(process, "new connections use the files as they are now (changed: client CA)")
        assert new_client.info(f"file://{data}/a.bin")["size"] == 3 << 20
        with pytest.raises(WorkerNotTrusted, match="refuses our client certificate"):
            with_cert(tls_ca, process, old.issue("d", ("x",), client=True)).info(
                f"file://{data}/a.bin"
            )
        bundle.write_text("not a certificate")
        wait_for_log(process, f"the replaced dora.worker.tls.client.ca.file={bundle} does not")
        assert new_client.info(f"file://{data}/a.bin")["size"] == 3 << 20  # the last one kept
    finally:
        process.stop()


def test_replaced_certificate_serves_new_connections_without_restart(
    tls_ca: CA, data: Path, tmp_path: Path
) -> None:
    live = tls_ca.issue("live")
    process = start(
        tmp_path / "w", data, *tls_defines(live), "dora.worker.tls.reload.interval=50ms"
    )
    try:
        fs = client(tls_ca, process)
        expected = (data / "a.bin").read_bytes()
        assert fs.cat_file(f"file://{data}/a.bin") == expected
        rotated = tls_ca.issue("rotated")
        replace(rotated, live)
        wait_for_serial(process.port, tls_ca, rotated.serial)
        assert fs.cat_file(f"file://{data}/a.bin") == expected  # the running client reads on
        live.cert.write_text("not a certificate")
        wait_for_log(process, "keeping the certificate and client CA in use")
        assert served_serial(process.port, tls_ca) == rotated.serial
        assert fs.info(f"file://{data}/a.bin")["size"] == len(expected)
    finally:
        process.stop()


def test_a_sidecars_health_check_follows_the_workers_scheme(
    worker: WorkerProcess, mutual: tuple[WorkerProcess, CA]
) -> None:
    for process in (worker, mutual[0]):  # mutual TLS: the check, with no certificate, gets 401
        info = RunningWorker.from_dict(json.loads(process.state.read_text()), None)
        assert info.url == process.url()
        assert answers(info)
        assert not answers(dataclasses.replace(info, scheme="http"))  # what it asked before


def test_sigterm_is_not_held_by_idle_tls_clients(tls_ca: CA, data: Path, tmp_path: Path) -> None:
    # An idle kept-alive TLS connection whose client reads nothing more (a pooled connection
    # between uses) must not hold the worker's graceful stop: closing it politely would wait
    # the event loop's 30 s SSL shutdown timeout for a close_notify that never comes.
    process = start(tmp_path / "w", data, *tls_defines(tls_ca.issue("server")))
    context = ssl.create_default_context(cafile=str(tls_ca.file))
    idle = [context.wrap_socket(socket.create_connection(("127.0.0.1", process.port)),
                                server_hostname="127.0.0.1") for _ in range(2)]  # fmt: skip
    try:
        for connection in idle:
            connection.sendall(b"GET /healthz HTTP/1.1\r\nHost: w\r\n\r\n")
            assert connection.recv(4096).startswith(b"HTTP/1.1 200")
        process.process.send_signal(signal.SIGTERM)
        # Far below the 30 s a polite close waits: this bounds a hang, it times nothing.
        process.process.wait(timeout=20)
        assert "worker stopped" in process.log()
        assert "Traceback" not in process.log()
    finally:
        for connection in idle:
            connection.close()
        process.stop()
