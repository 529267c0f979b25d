"""For the TLS tests: the settings that make a worker (:mod:`tests.integration.harness`) serve
TLS, the serial of the certificate it serves, and its files replaced as a Secret volume replaces
them."""

from __future__ import annotations

import socket
import ssl
import time

from cryptography import x509

from tests.integration.harness import WorkerProcess
from tests.worker.tls.certs import CA, Pair


def tls_defines(pair: Pair, client_ca: CA | None = None) -> list[str]:
    """The worker settings that serve ``pair`` (and require clients signed by ``client_ca``)."""
    defines = [f"dora.worker.tls.cert.file={pair.cert}", f"dora.worker.tls.key.file={pair.key}"]
    if client_ca is not None:
        defines.append(f"dora.worker.tls.client.ca.file={client_ca.file}")
    return defines


def wait_for_log(process: WorkerProcess, line: str) -> None:
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
