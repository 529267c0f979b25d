"""The network between the demo's worker and its object store: a TCP proxy
(:class:`worker.devlab.local.netproxy.TcpProxy`) that adds the latency ``--ufs-latency``
asks for and counts the requests and bytes the store sees, so each run can say what it cost
the UFS."""

from __future__ import annotations

from dataclasses import dataclass

from worker.devlab.local.netproxy import TcpProxy

UfsLink = TcpProxy


@dataclass(frozen=True)
class UfsCost:
    """What one run cost the object store, or None where nothing counted it."""

    requests: int | None
    bytes: int | None


def open_link(endpoint: str, latency_ms: int) -> UfsLink:
    """A started proxy to ``endpoint`` (``http://host:port``) with ``latency_ms`` of round
    trip."""
    return TcpProxy.to_url(endpoint, latency_ms / 1000).start()


def cost(link: UfsLink | None) -> UfsCost:
    """The counts since the last reset (then reset them), or unknown without a link."""
    if link is None:
        return UfsCost(None, None)
    stats = link.stats()
    link.reset_counts()
    return UfsCost(stats.requests, stats.bytes_down)
