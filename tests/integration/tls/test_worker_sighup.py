"""SIGHUP on a real worker process: it stays up, reads its TLS files and path rules file again
at once (whether or not they look changed) and logs what changed; the rules file is still
watched afterwards."""

from __future__ import annotations

import os
import signal
import ssl
import time
from pathlib import Path

import httpx
import pytest

from tests.integration.harness import WorkerProcess
from tests.integration.tls.tls_support import (
    replace,
    served_serial,
    tls_defines,
    wait_for_log,
    wait_for_serial,
)
from tests.worker.tls.certs import CA

pytestmark = [pytest.mark.integration]


def hang_up(process: WorkerProcess, times: int) -> None:
    """Send SIGHUP and wait for its reload to be logged (the ``times``-th one)."""
    process.process.send_signal(signal.SIGHUP)
    deadline = time.monotonic() + 30
    while process.log().count("worker received SIGHUP") < times:
        assert process.process.poll() is None, f"the worker died of SIGHUP:\n{process.log()}"
        assert time.monotonic() < deadline, process.log()
        time.sleep(0.05)


def test_sighup_reloads_the_certificate_and_rules_and_the_worker_stays_up(
    tls_ca: CA, tmp_path: Path
) -> None:
    """Issue 36 item 4: the worker died of SIGHUP's default action."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.txt").write_bytes(b"version 1")
    rules = tmp_path / "rules"
    rules.write_text(f"file://{data}/** max-age=0\n")
    live = tls_ca.issue("live")
    process = WorkerProcess(
        tmp_path / "w", f"dora.worker.ufs.roots=file://{data}", *tls_defines(live),
        f"dora.worker.path.rules.file={rules}",
        "dora.worker.tls.reload.interval=1h",  # only SIGHUP can reload it during the test
    )  # fmt: skip
    try:
        http = httpx.Client(
            base_url=process.url(),
            verify=ssl.create_default_context(cafile=tls_ca.file),
            timeout=30,
        )
        read = {"path": f"file://{data}/a.txt"}
        assert http.get("/v1/read", params=read).content == b"version 1"
        first = served_serial(process.port, tls_ca)
        rotated = tls_ca.issue("rotated")
        replace(rotated, live)
        # No lookup until the hangup: the rules' own watching checks only on lookups.
        rules.write_text(f"file://{data}/** immutable\nfile://{data}/x/** max-age=1s\n")
        hang_up(process, 1)
        wait_for_serial(process.port, tls_ca, rotated.serial)
        assert rotated.serial != first
        wait_for_log(process, "(changed: certificate, key)")
        wait_for_log(process, f"path rules reloaded from {rules}: 2 rules, 2 new, 1 gone")
        (data / "a.txt").write_bytes(b"version 2")
        assert http.get("/v1/read", params=read).content == b"version 1"  # immutable now

        hang_up(process, 2)  # nothing changed: read again all the same, and logged so
        wait_for_log(process, "(changed: none)")
        wait_for_log(process, "2 rules, 0 new, 0 gone")
        assert served_serial(process.port, tls_ca) == rotated.serial

        # The rules file is still watched without a hangup.
        rules.write_text(f"file://{data}/** max-age=0\n")
        deadline = time.monotonic() + 30
        while http.get("/v1/read", params=read).content != b"version 2":
            assert time.monotonic() < deadline, process.log()
            time.sleep(0.2)
        assert "1 rules, 1 new, 2 gone" in process.log()
        http.close()
    finally:
        process.stop()
    assert process.process.returncode == 0


def test_sighup_without_files_to_reload_leaves_the_worker_serving(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    process = WorkerProcess(tmp_path / "w", f"dora.worker.ufs.roots=file://{data}")
    try:
        hang_up(process, 1)
        wait_for_log(process, "nothing to reload")
        assert httpx.get(f"{process.url()}/healthz", timeout=30).status_code == 200
        assert os.waitpid(process.process.pid, os.WNOHANG) == (0, 0)
    finally:
        process.stop()
    assert process.process.returncode == 0
