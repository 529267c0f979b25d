"""A count-min sketch of how often ids were seen, with aging: TinyLFU's frequency estimate."""

from __future__ import annotations

from collections.abc import Hashable

ROWS = 4
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

    ``width`` grows (a power of two, at least twice the ids the caller tracks: see
    :meth:`ensure`), which forgets the counts so far. O(1) per call; the halving that ages the
    counts is O(width) once every ``10 * width`` increments. Not thread-safe: its owner's caller
    serializes calls.
    """

    def __init__(self, width: int = 64) -> None:
        self._resize(width)

    def ensure(self, tracked: int) -> None:
        """Make room to estimate ``tracked`` ids well: at least twice as many counters a row."""
        if 2 * tracked > self._width:
            self._resize(self._width * 2)

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

    def _resize(self, width: int) -> None:
        self._width = 1 << max(4, (width - 1).bit_length())
        self._shift = 64 - self._width.bit_length() + 1
        self._table = bytearray(ROWS * self._width)
        self._added = 0
