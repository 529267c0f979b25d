"""Ranged reads: a large range is split into chunks (``read.chunk.size``, 8MB by default) fetched
in parallel, all pinned to one version of the file so the pieces can never mix two versions.
Every chunk is resolved by a :class:`worker.client.resolvers.Ranges`. With a
:class:`worker.client.resolvers.DirectRanges` (the short-circuit reader) a range is read into one
buffer instead: what is local is filled in place, only the gaps go out in chunks.
"""

from __future__ import annotations

from collections.abc import Callable

from worker.client.errors import WorkerFailure
from worker.client.flow import Chunks, Flow, each_in_order, parallel
from worker.client.outbytes import OutBytes
from worker.client.resolvers import DirectRanges, Metadata, Ranges

FILL_PART = 2 << 20
"""At most this much of a local range (and at most a chunk) is filled from page files by one
thread; a larger range is cut into parts filled in parallel. A thread holds the GIL to check
the blocks it read, not while the kernel copies them (``preadv``): in one thread a streamed
``read(8 MiB)`` spent 27-30% of its time on the checks, which another thread's copy overlaps
(``bench.experiments.stream_bench``: more CPU, less wall time when a core is free)."""


def spans(start: int, end: int, chunk: int) -> list[tuple[int, int]]:
    """``[start, end)`` cut into ``[a, b)`` pieces of at most ``chunk`` bytes."""
    return [(a, min(a + chunk, end)) for a in range(start, end, chunk)]


class ChunkedReader:
    """Reads byte ranges as flows, in parallel chunks of at most ``chunk_size`` bytes, at most
    ``parallelism`` in flight.

    Thread-safe: it holds no state beyond its (thread-safe) parts.
    """

    def __init__(
        self, ranges: Ranges, metadata: Metadata, chunk_size: int, parallelism: int
    ) -> None:
        self.ranges = ranges
        self.metadata = metadata
        self.chunk_size = chunk_size
        self.parallelism = parallelism
        self.fill_part = min(chunk_size, FILL_PART)
        # Checked once: an isinstance against a Protocol costs microseconds per read.
        self._direct = ranges if isinstance(ranges, DirectRanges) else None

    def read(
        self,
        uri: str,
        start: int,
        end: int | None,
        *,
        version: str | None = None,
        sync_interval: str | None = None,
    ) -> Flow[bytes]:
        """Bytes ``[start, end)`` of ``uri`` (to the end of the file when ``end`` is None), cut
        at the end of the file. The first chunk is one request (all of a small file); the rest
        follow in parallel, pinned to the version the first was served at."""
        if self._direct is not None:
            known = yield from self._direct.pin(uri, version, sync_interval, start)
            if known is not None:
                last = known[1] if end is None else min(end, known[1])
                if start < last:
                    return (yield from self._into(self._direct, uri, start, last, known[0]))
        first_len = self.chunk_size if end is None else min(self.chunk_size, end - start)
        first = yield from self.ranges.read(
            uri, start, first_len, version=version, sync_interval=sync_interval
        )
        if len(first.data) < first_len or (end is not None and end - start <= first_len):
            return first.data
        pinned = first.version
        size = first.size
        if size is None:
            # A status at a pinned version is answered from the worker's cache.
            size = int((yield from self.metadata.status(uri, version=pinned))["size"])
        last = size if end is None else min(end, size)
        rest = yield from parallel(
            self.chunks(uri, start + first_len, last, pinned), self.parallelism
        )
        # One join: a second concatenation would copy the whole result again.
        return b"".join([first.data, *rest])

    def read_pinned(self, uri: str, start: int, end: int, version: str | None) -> Flow[bytes]:
        """Bytes ``[start, end)`` of the file at ``version``; ``end`` within the file."""
        if self._direct is not None and version is not None and start < end:
            pinned = yield from self._direct.pin(uri, version, None, start)
            if pinned is not None:
                return (yield from self._into(self._direct, uri, start, end, version))
        chunks = yield from parallel(self.chunks(uri, start, end, version), self.parallelism)
        return b"".join(chunks)

    def read_now(
        self, uri: str, start: int, end: int, version: str | None
    ) -> bytes | Flow[bytes] | None:
        """Bytes ``[start, end)`` at ``version`` (within the file) read in the calling thread
        when what the short-circuit reader knows already covers them: the bytes, or the flow
        that reads the pages found missing meanwhile. None, having read nothing, otherwise
        (read through :meth:`read_pinned`). For small reads, whose cost the flow driver's
        steps would otherwise double."""
        direct = self._direct
        if direct is None or version is None or not start < end <= start + self.fill_part:
            return None
        small = direct.small_now(uri, version, start, end - start)
        if small is not None:
            return small
        out = OutBytes(end - start)
        gaps = direct.fill_now(uri, version, start, out.view)
        if gaps is None:
            return None
        if not gaps:
            return out.take()
        return self._gaps(direct, uri, start, version, out, gaps)

    def _into(
        self, direct: DirectRanges, uri: str, start: int, end: int, version: str
    ) -> Flow[bytes]:
        """Bytes ``[start, end)`` at ``version`` (within the file) in one buffer: filled in
        place where local, the gaps read over HTTP in parallel chunks written into it."""
        out = OutBytes(end - start)
        view = out.view
        # Large ranges are filled a part per thread (FILL_PART).
        parts = spans(start, end, self.fill_part)
        if len(parts) == 1:
            gaps = yield from direct.fill(uri, version, start, view)
        else:
            yield from direct.locate(uri, version, start, end - start)
            filled = yield from parallel(
                [direct.fill(uri, version, a, view[a - start : b - start]) for a, b in parts],
                self.parallelism,
            )
            gaps = [gap for part in filled for gap in part]
        return (yield from self._gaps(direct, uri, start, version, out, gaps))

    def _gaps(
        self,
        direct: DirectRanges,
        uri: str,
        start: int,
        version: str,
        out: OutBytes,
        gaps: list[tuple[int, int]],
    ) -> Flow[bytes]:
        """``out`` (the bytes from ``start``) once ``gaps`` are read over HTTP into it."""
        view = out.view
        pieces = [piece for at, span in gaps for piece in spans(at, at + span, self.chunk_size)]
        if pieces:
            order = iter(pieces)

            def put(data: bytes) -> None:
                a, b = next(order)
                view[a - start : b - start] = data

            flows = [self._exact(uri, piece, version, direct.remote) for piece in pieces]
            yield from each_in_order(flows, self.parallelism, put)
        return out.take()

    def copy_pinned(
        self, uri: str, start: int, end: int, version: str | None, sink: Callable[[bytes], None]
    ) -> Flow[None]:
        """Hand the chunks of ``[start, end)`` at ``version`` to ``sink`` (a blocking call, such
        as a local write) in order, so memory holds at most ``parallelism`` chunks."""
        yield from each_in_order(self.chunks(uri, start, end, version), self.parallelism, sink)

    def stream_pinned(self, uri: str, start: int, end: int, version: str | None) -> Chunks:
        """The chunks of ``[start, end)`` at ``version`` as a request body (a copy)."""
        return Chunks(self.chunks(uri, start, end, version), self.parallelism)

    def chunks(self, uri: str, start: int, end: int, version: str | None) -> list[Flow[bytes]]:
        """One flow per chunk of ``[start, end)``; ``end`` must not pass the end of the file."""
        return [self._exact(uri, span, version) for span in spans(start, end, self.chunk_size)]

    def _exact(
        self, uri: str, span: tuple[int, int], version: str | None, ranges: Ranges | None = None
    ) -> Flow[bytes]:
        start, end = span
        source = self.ranges if ranges is None else ranges
        result = yield from source.read(uri, start, end - start, version=version)
        if len(result.data) != end - start:
            # Within the file at a pinned version, a short answer can only be a fault.
            raise WorkerFailure(f"read {uri} [{start}, {end}): got {len(result.data)} bytes")
        return result.data
