"""Issue 24's failover over TLS (the lab runs its workers over HTTPS, issue 25): a long-lived
client whose kept connection leads to an https worker that stopped answering (SIGSTOP: its
kernel still takes connections, but nothing completes a TLS handshake) gives it up after one
liveness probe over TLS, with the client's CA and certificate (the worker requires one), on
the synchronous and the asynchronous path, instead of waiting out its read timeout."""

import asyncio
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from config import load_config
from tests.integration.harness import WorkerProcess
from tests.integration.tls.tls_support import tls_defines
from tests.worker.tls.certs import CA
from worker.client.filesystem import DoraFileSystem
from worker.client.http import NoWorkerReachable
from worker.keys import build_registry

pytestmark = [pytest.mark.integration, pytest.mark.slow]
UNRESPONSIVE = "not even /healthz within 0.5s"


@pytest.fixture
def data(tmp_path: Path) -> Path:
    made = tmp_path / "data"
    made.mkdir()
    for name in ("a", "b", "c", "d"):
        (made / name).write_bytes(name.encode() * 1000)
    return made


@pytest.fixture
def worker(tmp_path: Path, data: Path, tls_ca: CA) -> Iterator[WorkerProcess]:
    started = WorkerProcess(
        tmp_path / "w", f"dora.worker.ufs.roots=file://{data}",
        *tls_defines(tls_ca.issue("server"), client_ca=tls_ca),
    )  # fmt: skip
    try:
        yield started
    finally:
        os.kill(started.process.pid, signal.SIGCONT)
        started.stop()


def filesystem(worker: WorkerProcess, tls_ca: CA, asynchronous: bool = False) -> DoraFileSystem:
    pair = tls_ca.issue("client", ("dora",), client=True)
    config = load_config(
        build_registry(),
        environ={},
        defines=[
            f"dora.user.workers={worker.url()}",
            "dora.user.client.connect.timeout=500ms",
            # Far above the probe: a client that waited for it would fail with another reason.
            "dora.user.client.timeout=20s",
            "dora.user.client.short.circuit.enabled=false",
            f"dora.user.tls.ca.file={tls_ca.file}",
            f"dora.user.tls.cert.file={pair.cert}",
            f"dora.user.tls.key.file={pair.key}",
        ],
    )
    return DoraFileSystem(
        config=config, skip_instance_cache=True, fallback_to_ufs=False, asynchronous=asynchronous
    )


def test_a_long_lived_client_gives_up_on_a_stopped_https_worker_after_one_probe(
    worker: WorkerProcess, data: Path, tls_ca: CA
) -> None:
    fs = filesystem(worker, tls_ca)
    assert fs.cat(f"file://{data}/a") == b"a" * 1000  # keeps a connection to the worker
    os.kill(worker.process.pid, signal.SIGSTOP)
    with pytest.raises(NoWorkerReachable, match=UNRESPONSIVE):
        fs.cat(f"file://{data}/b")
    assert fs.fallback_stats().unresponsive == 1
    os.kill(worker.process.pid, signal.SIGCONT)

    async def read_then_stop() -> None:
        afs = filesystem(worker, tls_ca, asynchronous=True)
        assert await afs._cat_file(f"file://{data}/c") == b"c" * 1000
        os.kill(worker.process.pid, signal.SIGSTOP)
        with pytest.raises(NoWorkerReachable, match=UNRESPONSIVE):
            await afs._cat_file(f"file://{data}/d")

    asyncio.run(read_then_stop())
