"""W-TinyLFU (Einziger, Friedman and Manes, 2017; Caffeine's policy): a small LRU window in front
of a segmented LRU main space, and a page leaves the window for the main space only if it was
seen more often lately than the main space's next victim.

Frequencies come from a count-min sketch (:mod:`pagestore.evict.sketch`) that counts every store
and read, also of pages no longer cached, and halves its counts periodically, so it remembers
what was popular lately and forgets what was popular long ago. A one-pass scan's pages are seen
once and lose to the hot set's; a new hot set read again outcounts the old one in time.

The window is a hundredth of the tracked pages (Caffeine's starting size; it does not adapt here)
and the main space's protected segment at most four fifths of them.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Generic

from pagestore.evict.base import K
from pagestore.evict.sketch import FrequencySketch

WINDOW_SHARE = 0.01
PROTECTED_SHARE = 0.8


class TinyLfuEvictor(Generic[K]):
    """W-TinyLFU over three ordered dicts and a frequency sketch: every call is O(1),
    :meth:`evict` amortized (each page moves from the window once per store). Not thread-safe
    (see Evictor).
    """

    def __init__(self) -> None:
        self._window: OrderedDict[K, None] = OrderedDict()
        self._probation: OrderedDict[K, None] = OrderedDict()
        self._protected: OrderedDict[K, None] = OrderedDict()
        self._sketch = FrequencySketch()
        # The victim evict() last named: named again until it is deleted or read, since
        # choosing it moved a page from the window into the main space.
        self._named: K | None = None

    def on_put(self, key: K) -> None:
        if key in self._window or key in self._probation or key in self._protected:
            self.on_get(key)
            return
        self._sketch.ensure(len(self) + 1)
        self._sketch.increment(key)
        self._window[key] = None

    def on_get(self, key: K) -> None:
        if key in self._window:
            self._window.move_to_end(key)
        elif key in self._protected:
            self._protected.move_to_end(key)
        elif self._probation.pop(key, False) is None:
            self._protected[key] = None
            if len(self._protected) > PROTECTED_SHARE * len(self):
                demoted, _ = self._protected.popitem(last=False)
                self._probation[demoted] = None
        else:
            return
        self._sketch.increment(key)
        if key == self._named:
            self._named = None

    def on_delete(self, key: K) -> None:
        for segment in (self._window, self._probation, self._protected):
            if segment.pop(key, False) is None:
                break
        if key == self._named:
            self._named = None

    def evict(self) -> K | None:
        if self._named is not None:
            return self._named
        candidate = None
        while len(self._window) > max(1, int(WINDOW_SHARE * len(self))):
            candidate, _ = self._window.popitem(last=False)
            self._probation[candidate] = None
        victim = next(iter(self._probation or self._protected or self._window), None)
        # The page just moved to the main space stays only if it is the more popular. A victim
        # that wins goes to the back of probation, so one popular page does not turn away every
        # candidate on its own (the next one faces the next page of probation).
        if (
            candidate is not None
            and victim is not None
            and candidate != victim
            and self._sketch.estimate(candidate) <= self._sketch.estimate(victim)
        ):
            self._probation.move_to_end(victim)
            victim = candidate
        self._named = victim
        return victim

    def __len__(self) -> int:
        return len(self._window) + len(self._probation) + len(self._protected)
