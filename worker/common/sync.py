"""The values of a sync interval (``dora.user.file.metadata.sync.interval``, DESIGN.md's
"Metadata semantics"), as the worker's metadata tiers and a client's near-cache both read them:
ms, with -1 for never and 0 for always."""

from __future__ import annotations

# The sync interval that means "never re-check while cached".
NEVER = -1


def stricter(a: int, b: int) -> int:
    """The stricter of two sync intervals: 0 before N before -1 (never)."""
    if NEVER in (a, b):
        return b if a == NEVER else a
    return min(a, b)
