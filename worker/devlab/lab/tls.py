"""TLS inside the lab (issue 25), as a deployment across hosts runs it: every worker serves
HTTPS with a certificate for its host's address (an IP SAN, as a node's certificate from the
chart's Secret would be) and requires client certificates (mutual TLS); etcd serves clients
over TLS and requires theirs; every client on a lab host verifies workers and etcd with the
lab's CA file, presents the lab's client certificate and sends a token, which so never crosses
a link in clear.

The certificates come from an :class:`Issuer` the caller gives (the tests make a throwaway CA
with the ``cryptography`` package, which only tests depend on)."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any, Protocol

from worker.common.tls import PemFiles
from worker.devlab.lab.netns import Host
from worker.devlab.local.etcd import EtcdTls


class Issued(Protocol):
    """A PEM certificate file and its key file."""

    @property
    def cert(self) -> Path: ...

    @property
    def key(self) -> Path: ...


class Issuer(Protocol):
    """A certificate authority: its CA bundle file and the certificates it signs."""

    @property
    def file(self) -> Path: ...

    def issue(
        self, stem: str, hosts: tuple[str, ...], *, client: bool = False, both: bool = False
    ) -> Issued:
        """A certificate for ``hosts`` (names or addresses) in files named after ``stem``: a
        server's, a client's (``client``) or one for both uses (``both``)."""
        ...


class LabTls:
    """The certificates and token of one lab: one client certificate and token shared by every
    client (and by the workers as etcd's clients), a server certificate per worker host and
    one for etcd, made as the lab starts its servers. Not thread-safe."""

    def __init__(self, issuer: Issuer) -> None:
        self.issuer = issuer
        self.client = issuer.issue("lab-client", ("dora-lab-client",), client=True)
        self.token = secrets.token_urlsafe(24)

    @property
    def trusted(self) -> PemFiles:
        """The lab's CA and client certificate, as a client's files."""
        return PemFiles(str(self.issuer.file), str(self.client.cert), str(self.client.key))

    def etcd(self, host: Host) -> EtcdTls:
        """etcd's files on ``host``: it requires the lab's client certificate."""
        # Both uses: etcd's grpc-gateway presents its server certificate to etcd as a client.
        pair = self.issuer.issue(f"etcd-{host.name}", (host.address,), both=True)
        return EtcdTls(pair.cert, pair.key, self.issuer.file, self.client.cert, self.client.key)

    def etcd_defines(self) -> list[str]:
        return [
            f"dora.cluster.etcd.tls.ca.file={self.issuer.file}",
            f"dora.cluster.etcd.tls.cert.file={self.client.cert}",
            f"dora.cluster.etcd.tls.key.file={self.client.key}",
        ]

    def worker_defines(self, host: Host) -> list[str]:
        """The worker's settings on ``host``: HTTPS with a certificate for the host's address,
        client certificates signed by the lab's CA required, etcd over TLS (the token is in
        :meth:`worker_environ`)."""
        pair = self.issuer.issue(f"worker-{host.name}", (host.address,))
        return [
            f"dora.worker.tls.cert.file={pair.cert}",
            f"dora.worker.tls.key.file={pair.key}",
            f"dora.worker.tls.client.ca.file={self.issuer.file}",
            *self.etcd_defines(),
        ]

    def worker_environ(self) -> dict[str, str]:
        """The worker's token, as an environment variable."""
        return {"DORA_WORKER_SECURITY_TOKEN": self.token}

    def client_defines(self) -> list[str]:
        """A client's settings: workers and etcd verified with the lab's CA, the lab's client
        certificate presented to both, the token sent."""
        return [
            f"dora.user.tls.ca.file={self.issuer.file}",
            f"dora.user.tls.cert.file={self.client.cert}",
            f"dora.user.tls.key.file={self.client.key}",
            f"dora.user.client.token={self.token}",
            *self.etcd_defines(),
        ]

    def http_settings(self) -> dict[str, Any]:
        """``httpx.Client`` settings for the controlling process's calls to the workers."""
        return {
            "verify": self.trusted.context(),
            "headers": {"Authorization": f"Bearer {self.token}"},
        }
