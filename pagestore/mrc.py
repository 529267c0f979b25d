"""An online miss-ratio curve of the page cache: what hit ratio an LRU cache of C bytes would
have had on the pages read so far, and the capacity a target hit ratio needs.

SHARDS (Waldspurger et al., FAST '15), fixed-size variant. Each page read is reduced to a 64-bit
key; a page is *sampled* when the key's top 24 bits (its sample value, in ``[0, P)``) are below
a threshold ``T``, so the same pages are always sampled (spatial sampling) at rate ``R = T / P``.
For every reference to a sampled page the model takes its stack (reuse) distance among the
sampled pages — how many other sampled pages were referenced since its last reference — and
scales it by ``1 / R`` into an estimate of the distance among all pages. An LRU cache of ``C``
pages hits exactly the references at a distance below ``C``, so the histogram of distances *is*
the hit-ratio curve of LRU. A cache with a scan-resistant policy keeps at least as much as LRU
on most traces (not on every one): for it the curve is a bound, usually below its hit ratio (the
capacity it names, enough or more), not a prediction.

Memory is bounded by the number of sampled pages tracked, :data:`MAX_SAMPLES` at most: when one
more would exceed it, the threshold is lowered to the largest sample value tracked and the pages
holding it are dropped (the fixed-size variant), so the rate adapts to the working set — 1 while
it has fewer than :data:`MAX_SAMPLES` pages (the curve is then exact up to the histogram's
binning, see :func:`_bin`), lower beyond. The distance histogram has a bounded number of bins.
A reference is weighted by ``1 / R`` at the time it was seen, so references made before the
rate fell keep their share.

Distances among sampled pages come from logical times: each reference to a sampled page takes
the next time, and the distance of a reference is the number of tracked pages whose last
reference is later than this page's previous one. Every time below the clock was some page's
last reference until that page was referenced again (or dropped); a flag per time marks those
*superseded*, and a Fenwick tree counts them per block of :data:`BLOCK` times, so a reference
costs one count of flags within a block (in C) and two walks of ``log2(4n / BLOCK)`` steps for
``n`` tracked pages. When the times run out the pages are renumbered ``0..n-1`` and nothing is
superseded.

The curve follows the work: every :data:`HALF_LIFE` sampled references (eight times the pages
tracked at most) the weight of everything counted so far — the histogram, the first
references and the count of references — is halved, so after the work moves to other files the
old reuse pattern fades (to 1/8 of its weight within three half-lives) and the curve becomes the
new one's. On a steady workload the halving scales hits and references alike and changes
nothing; a half-life well past the largest tracked distance keeps long reuses counted.

Capacities are pages times the page size: a store whose pages are shorter (the last page of a
file) holds more pages per byte than the curve assumes, so the advice errs towards more space.
"""

from __future__ import annotations

import hashlib
import heapq
import math
import threading
from array import array
from dataclasses import dataclass

from pagestore.page import PageId

SAMPLE_BITS = 24
P = 1 << SAMPLE_BITS
"""The modulus of sample values: a page is sampled when its sample value is below ``T``."""
MAX_SAMPLES = 32768
"""Sampled pages tracked at most. Each costs a dict entry, a heap entry and room for up to
eight times, about 250 bytes: some 8 MB in all, within the 16 MB the model may use
(``tests/pagestore/test_mrc.py`` measures it)."""
HALF_LIFE = 8 * MAX_SAMPLES
"""The default half-life of the curve's weights: 262,144 sampled references, eight times the
pages tracked at most, so the longest distance tracked is counted many times over a half-life."""
SUB_BINS = 64
"""Bins per power of two of distances past ``2 * SUB_BINS`` pages (each bin spans 1/64 of its
distance at most); distances below ``2 * SUB_BINS`` have a bin each, so small traces are exact."""

BLOCK_BITS = 8
BLOCK = 1 << BLOCK_BITS
"""Times per block of the tree of superseded times."""

_M64 = (1 << 64) - 1


_SEEDS: dict[tuple[str, str], int] = {}
"""The seeds of the files read lately (a read touches a few hot files); emptied past
:data:`_SEEDS_KEPT`. Each operation on it is one dict operation, atomic: two threads that race
compute one seed twice."""
_SEEDS_KEPT = 4096


def _file_seed(file_id: str, version: str) -> int:
    """A 64-bit hash of one version of one file."""
    digest = hashlib.blake2b(f"{file_id}\0{version}".encode(), digest_size=8).digest()
    seed = int.from_bytes(digest, "little")
    if len(_SEEDS) >= _SEEDS_KEPT:
        _SEEDS.clear()
    _SEEDS[file_id, version] = seed
    return seed


def page_key(page_id: PageId) -> int:
    """A page's 64-bit key: Python's hash of its file's seed and its index, which mixes them
    (xxHash's rounds) and, of integers, is the same in every process (only the hashes of
    strings are salted), so the same pages are sampled after a restart."""
    seed = _SEEDS.get((page_id.file_id, page_id.version))
    if seed is None:
        seed = _file_seed(page_id.file_id, page_id.version)
    return hash((seed, page_id.index)) & _M64


def _bin(distance: int) -> int:
    """The histogram bin of a distance in pages: the distance itself below ``2 * SUB_BINS``,
    else one of ``SUB_BINS`` bins per power of two."""
    if distance < 2 * SUB_BINS:
        return distance
    shift = distance.bit_length() - SUB_BINS.bit_length()
    return SUB_BINS * (shift + 1) + (distance >> shift) - SUB_BINS


def _bin_bounds(bin_: int) -> tuple[int, int]:
    """The distances ``[low, high)`` bin ``bin_`` holds."""
    if bin_ < 2 * SUB_BINS:
        return bin_, bin_ + 1
    shift = bin_ // SUB_BINS - 1
    low = (bin_ % SUB_BINS + SUB_BINS) << shift
    return low, low + (1 << shift)


@dataclass(frozen=True)
class CurvePoint:
    capacity_bytes: int
    hit_ratio: float


@dataclass(frozen=True)
class Curve:
    """The hit-ratio curve at one moment. Immutable.

    ``bins`` are ``(low, high, weight)`` in distance order: ``weight`` estimated references at
    a reuse distance in ``[low, high)`` pages; ``references`` counts every estimated reference,
    first references (which miss at any capacity) included."""

    page_size: int
    rate: float
    sampled: int
    tracked_pages: int
    references: float
    bins: tuple[tuple[int, int, float], ...]

    def hit_ratio(self, capacity_bytes: int) -> float:
        """The hit ratio of an LRU cache of ``capacity_bytes`` over the references so far (0.0
        before any). Distances within a bin are taken as spread evenly over it."""
        if self.references <= 0:
            return 0.0
        pages = capacity_bytes / self.page_size
        hits = 0.0
        for low, high, weight in self.bins:
            if high <= pages:
                hits += weight
            elif low < pages:
                hits += weight * (pages - low) / (high - low)
        return min(1.0, hits / self.references)

    def capacity_for(self, target: float) -> int | None:
        """The smallest capacity in bytes (whole pages) whose hit ratio reaches ``target``, or
        None when no capacity does (the rest are first references) or nothing was read yet."""
        if self.references <= 0:
            return None
        need = target * self.references
        hits = 0.0
        for low, high, weight in self.bins:
            if hits + weight >= need:
                within = 0.0 if weight <= 0 else max(0.0, need - hits) / weight
                pages = low + within * (high - low)
                return max(1, math.ceil(pages - 1e-9)) * self.page_size
            hits += weight
        return None

    def points(self) -> list[CurvePoint]:
        """The curve from (0 bytes, 0.0) through both ends of every bin with references, so
        that joining the points with straight lines gives :meth:`hit_ratio` everywhere."""
        if self.references <= 0:
            return []
        points = [CurvePoint(0, 0.0)]
        hits = 0.0
        for low, high, weight in self.bins:
            if low * self.page_size > points[-1].capacity_bytes:  # flat up to the bin
                points.append(CurvePoint(low * self.page_size, points[-1].hit_ratio))
            hits += weight
            points.append(CurvePoint(high * self.page_size, min(1.0, hits / self.references)))
        return points

    @property
    def max_hit_ratio(self) -> float:
        """The hit ratio of a cache large enough for everything referenced twice."""
        if self.references <= 0:
            return 0.0
        return min(1.0, sum(weight for _, _, weight in self.bins) / self.references)


def _adjusted(bins: list[tuple[int, float]], reuses: float) -> tuple[tuple[int, int, float], ...]:
    """``(low, high, weight)`` of the histogram ``bins`` (``(bin, weight)``, in order), their
    weights summing to ``reuses`` (the references seen that were not first references).

    SHARDS_adj: whether a hot page happens to be sampled swings the estimated count of
    references more than anything else, and a hot page's reuses are the shortest; so a
    shortfall is added at distance 0 and an excess taken from the shortest distances."""
    missing = reuses - sum(weight for _, weight in bins)
    adjusted: list[tuple[int, int, float]] = []
    if missing > 0:
        adjusted.append((0, 1, missing))
    for slot, counted in bins:
        taken = min(counted, max(0.0, -missing))
        missing += taken
        kept = counted - taken
        if kept > 0:
            low, high = _bin_bounds(slot)
            if adjusted and adjusted[-1][0] == low:
                kept += adjusted.pop()[2]
            adjusted.append((low, high, kept))
    return tuple(adjusted)


class MissRatioCurve:
    """The SHARDS model of the module docstring, fed one page reference at a time.

    Thread-safe: :meth:`record` decides without a lock whether a page is sampled (reading the
    threshold, an int, is atomic; a stale one is checked again under the lock), and takes the
    model's one lock, a leaf, only for sampled pages. :meth:`curve` takes it to copy the
    histogram."""

    def __init__(
        self,
        page_size: int,
        max_samples: int = MAX_SAMPLES,
        rate: float = 1.0,
        half_life: int = HALF_LIFE,
    ) -> None:
        if page_size <= 0 or max_samples <= 0 or not 0 < rate <= 1 or half_life <= 0:
            raise ValueError(f"bad model size: {page_size=} {max_samples=} {rate=} {half_life=}")
        self.page_size = page_size
        self._max = max_samples
        self._threshold = int(rate * P)
        self._weight = P / self._threshold
        """What one sampled reference stands for: ``1 / R``."""
        self._lock = threading.Lock()
        self._local = threading.local()
        self._seen: list[tuple[threading.Thread, list[int]]] = []
        """Each recording thread's count of references, sampled or not (a counter only its
        thread writes needs no lock); the counts of threads that ended are folded into
        ``_seen_before`` as others start, so this holds about as many as are alive."""
        self._seen_before = 0
        self._last: dict[int, int] = {}
        """Tracked page key -> logical time of its last reference."""
        self._largest: list[int] = []
        """A max-heap (negated) of ``sample value << 64 | key`` of the tracked pages."""
        self._flags, self._tree = _empty_times(0)
        self._now = 0
        self._bins = [0.0] * (_bin(max_samples * P) + 1)
        """Estimated references by distance bin (no distance exceeds ``max_samples / R``)."""
        self._first = 0.0
        self._sampled = 0
        self._half_life = half_life
        self._since_aged = 0
        """Sampled references since the weights were last halved."""
        self._aged = 0.0
        """References counted up to the last halving, halved as often as the histogram."""
        self._seen_mark = 0
        """References seen (the threads' counters) at the last halving."""

    def record(self, page_id: PageId) -> None:
        """Count one reference to ``page_id`` (a page served from the cache or stored in it)."""
        try:
            self._local.seen[0] += 1
        except AttributeError:
            self._count_thread()
        key = page_key(page_id)
        if key >> (64 - SAMPLE_BITS) >= self._threshold:
            return
        with self._lock:
            self._reference(key)

    def curve(self) -> Curve:
        """The curve of the references recorded so far, the older ones weighing less (aged)."""
        with self._lock:
            seen = self._aged + self._seen_total() - self._seen_mark
            counted = [(slot, weight) for slot, weight in enumerate(self._bins) if weight > 0]
            bins = _adjusted(counted, seen - self._first)
            return Curve(
                page_size=self.page_size,
                rate=self._threshold / P,
                sampled=self._sampled,
                tracked_pages=len(self._last),
                references=max(float(seen), self._first + sum(w for _, _, w in bins)),
                bins=bins,
            )

    def _seen_total(self) -> int:
        """References seen, sampled or not, by every thread (the lock held)."""
        return self._seen_before + sum(cell[0] for _, cell in self._seen)

    def _count_thread(self) -> None:
        """Give this thread its counter, holding its first reference; fold the counters of
        threads that ended (they count no more) into one figure."""
        self._local.seen = cell = [1]
        with self._lock:
            ended = [(t, c) for t, c in self._seen if not t.is_alive()]
            if ended:
                self._seen_before += sum(c[0] for _, c in ended)
                self._seen = [(t, c) for t, c in self._seen if t.is_alive()]
            self._seen.append((threading.current_thread(), cell))

    # -- under the lock -------------------------------------------------------------------------

    def _reference(self, key: int) -> None:
        value = key >> (64 - SAMPLE_BITS)
        if value >= self._threshold:  # the threshold fell since record() looked
            return
        if self._now == len(self._flags):
            self._renumber()
        now = self._now
        self._sampled += 1
        self._since_aged += 1
        if self._since_aged >= self._half_life:
            self._age()
        weight = self._weight
        last = self._last
        previous = last.get(key)
        if previous is None:
            self._first += weight
            heapq.heappush(self._largest, -((value << 64) | key))
        else:
            # Of the times up to ``previous``, the ones not superseded are pages still last
            # referenced then (this one included); every other tracked page came later.
            # (The tree's two walks are written out here: this is the hot path.)
            flags, tree, block = self._flags, self._tree, previous >> BLOCK_BITS
            superseded = flags.count(1, block << BLOCK_BITS, previous)
            index = block
            while index > 0:
                superseded += tree[index]
                index &= index - 1
            later = len(last) - (previous + 1 - superseded)
            flags[previous] = 1
            index, size = block + 1, len(tree)
            while index < size:
                tree[index] += 1
                index += index & -index
            distance = int(later * weight)
            slot = distance if distance < 2 * SUB_BINS else _bin(distance)
            self._bins[slot] += weight
        last[key] = now
        self._now = now + 1
        if len(last) > self._max:
            self._lower_threshold()

    def _age(self) -> None:
        """Halve the weight of everything counted so far."""
        self._since_aged = 0
        seen = self._seen_total()
        self._aged = (self._aged + seen - self._seen_mark) / 2
        self._seen_mark = seen
        self._first /= 2
        self._bins = [weight / 2 for weight in self._bins]

    def _lower_threshold(self) -> None:
        """Drop the pages of the largest sample value tracked and sample below it from now on."""
        top = -self._largest[0] >> 64
        while self._largest and -self._largest[0] >> 64 == top:
            key = -heapq.heappop(self._largest) & _M64
            self._supersede(self._last.pop(key))
        self._threshold = top
        self._weight = P / top

    def _supersede(self, time: int) -> None:
        self._flags[time] = 1
        tree, index, size = self._tree, (time >> BLOCK_BITS) + 1, len(self._tree)
        while index < size:
            tree[index] += 1
            index += index & -index

    def _renumber(self) -> None:
        """Give the tracked pages the times 0..n-1 in the order of their last references, with
        room for about 4n times in all (so the tree's walks stay short while few pages are
        tracked, and this runs once per 3n references or so), none superseded yet."""
        order = sorted(self._last, key=self._last.__getitem__)
        self._last = {key: time for time, key in enumerate(order)}
        self._flags, self._tree = _empty_times(len(order))
        self._now = len(order)


def _empty_times(pages: int) -> tuple[bytearray, array[int]]:
    """Room for about ``4 * pages`` times (at least 1024), none superseded: a flag per time,
    and a Fenwick tree (slot 0 unused) of superseded times per block."""
    times = 1 << max(10, (4 * pages).bit_length())
    return bytearray(times), array("q", bytes(8 * ((times >> BLOCK_BITS) + 1)))
