"""A real ``dora worker start`` process with TLS settings, for the TLS tests: the address and
base URL it announced, its log, and a stop by PID; the serial of the certificate it serves, and
its files replaced as a Secret volume replaces them."""

from __future__ import annotations

import json
import signal
import socket
import ssl
import subprocess
import sys
import time
from pathlib import Path

from cryptography import x509

from tests.worker.tls.certs import CA, Pair

DORA = str(Path(sys.executable).with_name("dora"))


def tls_defines(pair: Pair, client_ca: CA | None = None) -> list[str]:
    """The worker settings that serve ``pair`` (and require clients signed by ``client_ca``)."""
    defines = [f"dora.worker.tls.cert.file={pair.cert}", f"dora.worker.tls.key.file={pair.key}"]
    if client_ca is not None:
        defines.append(f"dora.worker.tls.client.ca.file={client_ca.file}")
    return defines


class TlsWorker:
    """One worker process on a free loopback port; stopped by :meth:`stop` (SIGTERM by PID)."""

    def __init__(self, work: Path, *defines: str) -> None:
        work.mkdir(parents=True, exist_ok=True)
        self.state = work / "state.json"
        self.log_path = work / "worker.log"
        args = [DORA, "worker", "start", "-Ddora.worker.http.port=0", f"-Ddora.work.dir={work}",
                *(f"-D{d}" for d in defines), "--state-file", str(self.state)]  # fmt: skip
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 60
            while not self.state.exists():
                assert self.process.poll() is None, self.log_path.read_text()
                assert time.monotonic() < deadline, "the worker did not write its state file"
                time.sleep(0.05)
        except BaseException:
            self.process.kill()
            self.process.wait()
            raise
        info = json.loads(self.state.read_text())
        self.port = int(info["port"])
        self.scheme = str(info["scheme"])

    def url(self, host: str = "127.0.0.1") -> str:
        return f"{self.scheme}://{host}:{self.port}"

    def log(self) -> str:
        return self.log_path.read_text()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout=60)


def wait_for_log(process: TlsWorker, line: str) -> None:
    deadline = time.monotonic() + 30
    while line not in process.log():
        assert time.monotonic() < deadline, process.log()
        time.sleep(0.05)


def served_serial(port: int, tls_ca: CA) -> int:
    context = ssl.create_default_context(cafile=str(tls_ca.file))
    with (
        socket.create_connection(("127.0.0.1", port), timeout=5) as raw,
        context.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
    ):
        der = tls.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der).serial_number


def wait_for_serial(port: int, tls_ca: CA, serial: int) -> None:
    deadline = time.monotonic() + 30
    while served_serial(port, tls_ca) != serial:
        assert time.monotonic() < deadline, "the worker did not take the replaced certificate"
        time.sleep(0.05)


def replace(pair: Pair, live: Pair) -> None:
    """Put ``pair`` where the worker reads ``live`` from, as a Secret volume does: by rename."""
    for source, target in ((pair.key, live.key), (pair.cert, live.cert)):
        temp = target.with_suffix(".new")
        temp.write_bytes(source.read_bytes())
        temp.replace(target)
