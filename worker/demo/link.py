"""The network between the demo's worker and its object store: a TCP proxy that adds the
latency ``--ufs-latency`` asks for and counts the requests and bytes the store sees, so each run
can say what it cost the UFS.

The proxy is ``worker.netproxy.TcpProxy``; this module depends only on the little of it the demo
uses (:class:`UfsLink`), and runs without one when no latency is asked for and the module is not
installed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


class LinkStats(Protocol):
    """Counts since the last reset: HTTP requests the store received, bytes it sent back."""

    requests: int
    bytes_down: int


class UfsLink(Protocol):
    """A started proxy in front of the object store; ``latency`` (seconds of round trip) may be
    changed while it runs."""

    latency: float

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``: the endpoint to give the worker."""
        ...

    def stats(self) -> LinkStats: ...

    def reset_counts(self) -> None: ...

    def stop(self) -> None: ...


@dataclass(frozen=True)
class UfsCost:
    """What one run cost the object store, or None where nothing counted it."""

    requests: int | None
    bytes: int | None


def open_link(endpoint: str, latency_ms: int) -> UfsLink | None:
    """A started proxy to ``endpoint`` (``http://host:port``) with ``latency_ms`` of round
    trip, or None when none is needed and ``worker.netproxy`` is missing.

    Raises RuntimeError when a latency is asked for and no proxy module is installed.
    """
    try:
        from worker.netproxy import TcpProxy  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        if latency_ms:
            raise RuntimeError(
                "--ufs-latency needs worker.netproxy (the delaying TCP proxy), which this "
                "installation lacks"
            ) from None
        return None
    link: UfsLink = TcpProxy.to_url(endpoint, latency_ms / 1000).start()
    return link


def cost(link: UfsLink | None) -> UfsCost:
    """The counts since the last reset (then reset them), or unknown without a link."""
    if link is None:
        return UfsCost(None, None)
    stats = link.stats()
    link.reset_counts()
    return UfsCost(stats.requests, stats.bytes_down)
