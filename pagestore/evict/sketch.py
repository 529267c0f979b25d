"""A count-min sketch of how often ids were seen, with aging: TinyLFU's frequency estimate."""

from __future__ import annotations

from collections.abc import Hashable

ROWS = 4
MIN_WIDTH = 1 << 10
"""Counters a row at first (4 KB in all): few enough ids share one that a small store's hot
pages are not outcounted by a scan's through collisions."""
MAX_COUNT = 15
"""Counts saturate here (four bits, as in Caffeine's sketch): enough to tell hot from cold."""

SAMPLE_FACTOR = 10
"""Counts are halved every ``SAMPLE_FACTOR * width`` increments, so old popularity fades."""

_SEEDS = (0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93)
_MASK64 = (1 << 64) - 1
_HALVE = bytes(n >> 1 for n in range(256))


class FrequencySketch:
    """Estimates, for any id, how many times it was counted lately (an overestimate, never an
    underestimate, up to :data:`MAX_COUNT`), in ``4 * width`` bytes however many ids pass.

    ``width`` (counters a row, a power of two) doubles whenever the caller tracks more than a
    quarter of it (see :meth:`ensure`); a row's counter is picked by the top bits of a hash, so
    each counter splits in two that keep its count, and no count is lost. O(1) per call; the
    doubling, and the halving that ages the counts once every ``10 * width`` increments, are
    O(width), so O(1) amortized. Not thread-safe: its owner's caller serializes calls.
    """

    def __init__(self) -> None:
        self._width = MIN_WIDTH
        self._shift = 64 - (MIN_WIDTH.bit_length() - 1)
        self._table = bytearray(ROWS * self._width)
        self._added = 0

    def ensure(self, tracked: int) -> None:
        """Make room to estimate ``tracked`` ids well: at least four counters a row for each."""
        if 4 * tracked > self._width:
            doubled = bytearray(2 * len(self._table))
            doubled[0::2] = doubled[1::2] = self._table
            self._table = doubled
            self._width *= 2
            self._shift -= 1

    def increment(self, key: Hashable) -> None:
        table = self._table
        for index in self._indexes(key):
            if table[index] < MAX_COUNT:
                table[index] += 1
        self._added += 1
        if self._added >= SAMPLE_FACTOR * self._width:
            self._table = bytearray(self._table.translate(_HALVE))
            self._added //= 2

    def estimate(self, key: Hashable) -> int:
        table = self._table
        return min(table[index] for index in self._indexes(key))

    def _indexes(self, key: Hashable) -> list[int]:
        spread = hash(key) & _MASK64
        spread ^= spread >> 29
        shift, width = self._shift, self._width
        return [
            row * width + (((spread * seed) & _MASK64) >> shift) for row, seed in enumerate(_SEEDS)
        ]
