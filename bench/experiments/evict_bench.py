"""Eviction policies side by side: scan resistance and following the work, hit ratio on a Zipf
trace with periodic scans, the policies' own cost, and the scan scenario on a real worker.

    .venv/bin/python -m bench.experiments.evict_bench [--repeats 3] \
        [--sections shift,zipf,cost,worker,quota]

Every section runs the real evictor classes (``pagestore/evict/``), each policy in the same run.

- ``shift``: the issue's scenario in page ids (``tests/pagestore/evict_support.py``): capacity
  480 pages, a hot set of 320 read twice, a one-pass scan of 5x the capacity, then a new hot set
  of 320 read three times; the share of each hot set held after. Median over ``--repeats`` runs
  with different ids (W-TinyLFU's sketch hashes them).
- ``zipf``: 200,000 reads of 20,000 pages drawn with Zipf(1.0), capacity 2,000 pages, with a
  one-pass scan of new pages at two rates (:data:`ZIPF_SCANS`). Hit ratio of the Zipf reads
  (the scans are misses for every policy). Median over ``--repeats`` seeds. The last row is a
  bound no policy passes (:func:`a0_hit_ratio`).
- ``cost``: a policy tracking 100,000 pages: admissions (evict, delete the victim, put a new
  page) and reads (``on_get`` of a tracked page) per second, in one thread. Median of
  ``--repeats`` rounds, the order of the policies rotating each round; and the policy's own
  memory per tracked page (tracemalloc, the page ids excluded, a ghost queue full).
- ``worker``: ``tests/integration/worker/test_eviction_worker.py``'s scenario on a real worker per
  policy (48 MB store of 1 MB pages, 32 MB hot set read twice, 256 MB scan, new 32 MB hot set
  read three times), shares from ``/v1/status``'s ``cached_bytes``.
- ``quota``: what a read of a tracked page costs the default policy behind the stores'
  ``PinningEvictor``, the page charged to a quota (its account's own evictor is told too) or not.
"""

from __future__ import annotations

import argparse
import itertools
import random
import statistics
import tempfile
import time
import tracemalloc
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from pathlib import Path

from pagestore.evict import DEFAULT_EVICTOR, EVICTORS, Evictor, make_evictor
from pagestore.page import PageKey
from pagestore.pins import PinningEvictor, PinState
from pagestore.quota import Account, QuotaBook
from tests.integration.worker.test_eviction_worker import run_shift
from tests.pagestore.evict_support import IdCache, scan_then_shift


def median_of(runs: Sequence[float]) -> float:
    return statistics.median(runs)


def shift_table(repeats: int) -> None:
    print("| policy | hot set held after a 5x scan | new hot set held after 3 reads |")
    print("|---|---|---|")
    for policy in EVICTORS:
        results = [scan_then_shift(policy, 480, 320, salt=f"r{n}:") for n in range(repeats)]
        kept = median_of([r.hot_after_scan for r in results])
        new = median_of([r.new_hot_after_three_reads for r in results])
        print(f"| {name(policy)} | {kept:.1%} | {new:.1%} |")


def zipf_trace(seed: int, pages: int, reads: int, every: int, scan: int) -> list[Hashable]:
    """Zipf(1.0) reads of ``pages`` ids with a one-pass scan of ``scan`` new ids every ``every``
    reads; scan ids are tuples, Zipf ids ints."""
    rng = random.Random(seed)
    weights = list(itertools.accumulate(1 / rank for rank in range(1, pages + 1)))
    order = list(range(pages))
    rng.shuffle(order)  # popularity unrelated to the id
    trace: list[Hashable] = []
    for start in range(0, reads, every):
        trace += [order[r] for r in rng.choices(range(pages), cum_weights=weights, k=every)]
        trace += [("scan", start, n) for n in range(scan)]
    return trace


def a0_hit_ratio(trace: Sequence[Hashable], capacity: int) -> float:
    """The hit ratio of the Zipf reads had the ``capacity`` pages they read most been held from
    the start (A0): under independent references no policy that does not know the future does
    better on average (Aho, Denning and Ullman, 1971), and this in-hindsight choice, with no
    first misses, is a little above even that: a bound no row can pass."""
    reads = [key for key in trace if not isinstance(key, tuple)]
    counts = Counter(reads)
    return sum(n for _, n in counts.most_common(capacity)) / len(reads)


def zipf_hit_ratio(policy: str, trace: Sequence[Hashable], capacity: int) -> float:
    cache = IdCache(policy, capacity)
    hits = reads = 0
    for key in trace:
        hit = cache.read(key)
        if not isinstance(key, tuple):
            reads += 1
            hits += hit
    return hits / reads


ZIPF_SCANS = ((5_000, 2_000), (10_000, 2_000), (40_000, 4_000))
"""(reads between scans, pages a scan reads once): a 1x-capacity scan every 5,000 reads (2/7 of
the traffic) or every 10,000 (a sixth), and a 2x-capacity scan every 40,000 (a tenth)."""


def zipf_table(repeats: int) -> None:
    ratios: dict[str, list[float]] = {p: [] for p in EVICTORS}
    bound: list[float] = []
    for every, scan in ZIPF_SCANS:
        traces = [zipf_trace(seed, 20_000, 200_000, every, scan) for seed in range(repeats)]
        for policy in EVICTORS:
            ratios[policy].append(median_of([zipf_hit_ratio(policy, t, 2_000) for t in traces]))
        bound.append(median_of([a0_hit_ratio(t, 2_000) for t in traces]))
    best = [max(r[n] for r in ratios.values()) for n in range(len(ZIPF_SCANS))]
    head = " | ".join(f"{s:,} scanned every {e:,} reads" for e, s in ZIPF_SCANS)
    print("Hit ratio of the Zipf reads (points against LRU; points against the column's best).\n")
    print(f"| policy | {head} |")
    print("|---" * (1 + len(ZIPF_SCANS)) + "|")
    for policy, values in ratios.items():
        cells = " | ".join(
            f"{ratio:.1%} ({points(ratio - ratios['lru'][n])}; {points(ratio - best[n])})"
            for n, ratio in enumerate(values)
        )
        print(f"| {name(policy)} | {cells} |")
    cells = " | ".join(
        f"{ratio:.1%} ({points(ratio - ratios['lru'][n])})" for n, ratio in enumerate(bound)
    )
    print(f"| bound: the 2,000 pages read most, held (A0) | {cells} |")


def points(difference: float) -> str:
    return f"{100 * difference:+.1f} pts"


def timed(fn: Callable[[], None]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def cost_round(policy: str, tracked: int, ops: int) -> tuple[float, float]:
    """Admissions per second and reads per second of ``policy`` tracking ``tracked`` pages."""
    keys = [PageKey("f" * 64, "v" * 32, n) for n in range(tracked + ops)]
    evictor: Evictor[PageKey] = make_evictor(policy)
    for key in keys[:tracked]:
        evictor.on_put(key)
    rng = random.Random(1)
    reads = [keys[rng.randrange(tracked // 2, tracked)] for _ in range(ops)]

    def admit() -> None:
        for key in keys[tracked:]:
            victim = evictor.evict()
            assert victim is not None
            evictor.on_delete(victim)
            evictor.on_put(key)

    def read() -> None:
        for key in reads:
            evictor.on_get(key)

    admitting = timed(admit)
    return ops / admitting, ops / timed(read)


def bytes_per_page(policy: str, tracked: int) -> float:
    """The policy's own memory per tracked page (the ids excluded), after as many admissions as
    pages, so a ghost queue is full."""
    keys = [PageKey("f" * 64, "v" * 32, n) for n in range(2 * tracked)]
    tracemalloc.start()
    evictor: Evictor[PageKey] = make_evictor(policy)
    for key in keys[:tracked]:
        evictor.on_put(key)
    for key in keys[tracked:]:
        victim = evictor.evict()
        assert victim is not None
        evictor.on_delete(victim)
        evictor.on_put(key)
    used, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return used / tracked


def cost_table(repeats: int) -> None:
    admits: dict[str, list[float]] = {p: [] for p in EVICTORS}
    reads: dict[str, list[float]] = {p: [] for p in EVICTORS}
    for n in range(repeats):
        for policy in EVICTORS[n % len(EVICTORS) :] + EVICTORS[: n % len(EVICTORS)]:
            admit, read = cost_round(policy, 100_000, 200_000)
            admits[policy].append(admit)
            reads[policy].append(read)
    lru_read = 1e9 / median_of(reads["lru"])
    print(
        "| policy | admissions+evictions/s | reads/s | ns per read | per read vs LRU "
        "| bytes per page |"
    )
    print("|---|---|---|---|---|---|")
    for policy in EVICTORS:
        ns = 1e9 / median_of(reads[policy])
        print(
            f"| {name(policy)} | {2 * median_of(admits[policy]):,.0f} "
            f"| {median_of(reads[policy]):,.0f} | {ns:.0f} | {ns / lru_read:.2f}x "
            f"(+{ns - lru_read:.0f} ns) | {bytes_per_page(policy, 100_000):.0f} |"
        )


def quota_read_ns(charged: bool, tracked: int = 100_000) -> float:
    """ns per read of a page the default policy tracks behind the stores' wrapper
    (``PinningEvictor``), its page charged to a quota or not."""
    book = QuotaBook(DEFAULT_EVICTOR)
    evictor = PinningEvictor(make_evictor(DEFAULT_EVICTOR), PinState(0), lambda key: 1, book)
    keys = [PageKey("f" * 64, "v" * 32, n) for n in range(tracked)]
    for key in keys:
        if charged:
            book.expect(key, (Account("quota", 1 << 50),))
        evictor.on_put(key)

    def read() -> None:
        for key in keys:
            evictor.on_get(key)

    return 1e9 * timed(read) / tracked


def quota_table(repeats: int) -> None:
    print("| pages | ns per read | vs uncharged |")
    print("|---|---|---|")
    plain = median_of([quota_read_ns(False) for _ in range(repeats)])
    charged = median_of([quota_read_ns(True) for _ in range(repeats)])
    print(f"| charged to no quota | {plain:.0f} | 1.00x |")
    print(f"| charged to one quota | {charged:.0f} | {charged / plain:.2f}x |")


def worker_table() -> None:
    print("| policy | hot set cached after the 256 MB scan | new hot set after 3 reads |")
    print("|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for policy in EVICTORS:
            result = run_shift(Path(tmp) / policy, Path(tmp) / "data", policy)
            print(
                f"| {name(policy)} | {result.hot_after_scan:.1%} "
                f"| {result.new_hot_after_three_reads:.1%} |"
            )


def name(policy: str) -> str:
    return f"**{policy}** (default)" if policy == DEFAULT_EVICTOR else policy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--sections",
        default="shift,zipf,cost,worker,quota",
        help="which sections to run, comma separated (default: all)",
    )
    args = parser.parse_args()
    sections = {
        "shift": ("a 5x scan, then the work moves (ids)", lambda: shift_table(args.repeats)),
        "zipf": ("Zipf(1.0) with periodic scans", lambda: zipf_table(args.repeats)),
        "cost": ("one thread, 100,000 tracked pages", lambda: cost_table(args.repeats)),
        "worker": ("a real worker, 48 MB of 1 MB pages", worker_table),
        "quota": (
            "a read's cost with quotas, behind the stores' wrapper",
            lambda: quota_table(args.repeats),
        ),
    }
    for key in args.sections.split(","):
        title, section = sections[key]
        print(f"\n### {key}: {title}\n", flush=True)
        section()


if __name__ == "__main__":
    main()
