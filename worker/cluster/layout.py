"""Where the cluster keeps things in etcd, and the worker entry's format.

Worker entries follow Alluxio's ``EtcdMembershipManager`` so Alluxio-aware tools can read them:

- ``/ServiceDiscovery/<cluster>/<worker id>``: the live entry, attached to the worker's lease, so
  it disappears when the worker stops keeping the lease alive;
- ``/DHT/<cluster>/AUTHORIZED/<worker id>``: the permanent entry (every worker that ever joined;
  one without a live entry is OFFLINE);

both holding Alluxio's JSON ``WorkerServiceEntity`` (``Identity``, ``ServiceEntityName``,
``WorkerNetAddress`` with ``Host`` and ``HttpServerPort``, ``State``, ``GenerationNumber``; the
clients that read it, Alluxio's and alluxiofs up to 1.0.17, need the identity and the address to
place the worker on their ring), plus a ``Dora`` object
with what only doracache has (start time, capacity, the URL scheme clients reach it by:
``http`` or ``https``, and the port of its S3 endpoint when it serves one, so another worker
can pass it the S3 reads of the keys it owns). Alluxio's Gson reader ignores the extra field.
The worker id is, as in Alluxio, the MD5 of the worker's main address.

Our own keys live under ``/dora/<cluster>/``: ``feed`` (the invalidation feed, one key whose
revisions are the events' order) and ``applied/<worker id>`` (the feed revision each worker has
applied, under its lease, for ``dora cluster ls``).
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import re
from dataclasses import dataclass
from typing import Any

from worker.cluster import entries
from worker.cluster.entries import BadEntry

# A DNS name (RFC 1123 labels; "_" too, as some clusters' node names have) or an IPv4 address.
# No IPv6: a ring name is "host:port", which an IPv6 literal cannot be without brackets.
_HOST = re.compile(
    r"(?=.{1,253}$)[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,62})(?:\.[A-Za-z0-9_][A-Za-z0-9_-]{0,62})*"
)


def live_prefix(cluster: str) -> str:
    return f"/ServiceDiscovery/{cluster}/"


def authorized_prefix(cluster: str) -> str:
    return f"/DHT/{cluster}/AUTHORIZED/"


def feed_key(cluster: str) -> str:
    return f"/dora/{cluster}/feed"


def applied_prefix(cluster: str) -> str:
    return f"/dora/{cluster}/applied/"


def worker_id(host: str, port: int) -> str:
    """A worker's stable id: the MD5 of ``host:port`` (not a security use)."""
    return hashlib.md5(f"{host}:{port}".encode(), usedforsecurity=False).hexdigest()


@dataclass(frozen=True)
class WorkerInfo:
    """What a worker says about itself when it joins. Immutable."""

    host: str
    port: int
    started_ms: int
    capacity_bytes: int
    scheme: str = "http"
    s3_port: int = 0
    """The worker's S3 endpoint port (``dora.worker.s3.port``; 0: it serves none)."""

    @property
    def id(self) -> str:
        return worker_id(self.host, self.port)

    @property
    def name(self) -> str:
        """``host:port``, the name hash rings are keyed by."""
        return f"{self.host}:{self.port}"

    @property
    def url(self) -> str:
        """The base URL clients reach the worker at."""
        return f"{self.scheme}://{self.name}"

    @property
    def s3_url(self) -> str | None:
        """The base URL of the worker's S3 endpoint (same host and scheme), None without one."""
        return f"{self.scheme}://{self.host}:{self.s3_port}" if self.s3_port else None

    def encode(self) -> bytes:
        entity: dict[str, Any] = {
            "Identity": {"version": 1, "identifier": self.id},
            "ServiceEntityName": self.id,
            "WorkerNetAddress": {
                "Host": self.host,
                "ContainerHost": "",
                "RpcPort": 0,
                "DataPort": 0,
                "SecureRpcPort": 0,
                "NettyDataPort": 0,
                "WebPort": self.port,
                "DomainSocketPath": "",
                "HttpServerPort": self.port,
            },
            "State": "AUTHORIZED",
            "GenerationNumber": -1,
            "Dora": {
                "StartTimeMs": self.started_ms,
                "CapacityBytes": self.capacity_bytes,
                "Scheme": self.scheme,
                **({"S3Port": self.s3_port} if self.s3_port else {}),
            },
        }
        return json.dumps(entity, separators=(",", ":")).encode()

    @classmethod
    def decode(cls, raw: bytes) -> WorkerInfo:
        """Raises BadEntry (and nothing else) for a value that is not a worker entry with a
        valid host and HTTP port."""
        entity = entries.mapping(entries.load_json(raw, "worker entry"), "worker entry")
        address = entries.mapping(entity.get("WorkerNetAddress"), "worker WorkerNetAddress")
        extra = entries.mapping(entity.get("Dora", {}), "worker Dora")
        return cls(
            host=valid_host(entries.text(address.get("Host"), "worker Host", 253)),
            port=entries.integer(address.get("HttpServerPort"), "worker HttpServerPort", 1, 65535),
            started_ms=entries.integer(extra.get("StartTimeMs", 0), "worker StartTimeMs"),
            capacity_bytes=entries.integer(extra.get("CapacityBytes", 0), "worker CapacityBytes"),
            scheme=_scheme(extra.get("Scheme", "http")),
            s3_port=entries.integer(extra.get("S3Port", 0), "worker S3Port", 0, 65535),
        )


def _scheme(value: object) -> str:
    """A member's URL scheme (entries written before TLS carry none: http)."""
    scheme = entries.text(value, "worker Scheme", 5)
    if scheme not in ("http", "https"):
        raise BadEntry(f"worker Scheme: expected http or https, got {scheme!r}")
    return scheme


def valid_host(host: str) -> str:
    """``host`` if it is a host name or an IPv4 address; raises BadEntry otherwise."""
    try:
        if ipaddress.ip_address(host).version == 4:
            return host
    except ValueError:
        if _HOST.fullmatch(host):
            return host
    raise BadEntry(f"worker Host: expected a host name or an IPv4 address, got {host[:60]!r}")
