"""Handing free memory back to the system: what glibc keeps without it, and the worker's trimmer."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time

import pytest

from config import load_config
from worker.keys import build_registry
from worker.malloc import Trimmer, malloc_trim, trimming

# A worker's pattern in small: a big block freed (glibc then serves the next big blocks from its
# heap, not from mmap), many 200 KB blocks (request bodies), all freed but every 50th, which
# keeps the freed ones between them from being the top of the heap.
FRAGMENT = """
import json, sys
from worker.malloc import malloc_trim
from worker.memtrace import resident
big = bytearray(16 << 20)
del big
blocks = [bytearray(200_000) for _ in range(1000)]
survivors = blocks[::50]
del blocks
kept = resident()["rss_anon"]
if sys.argv[1] == "trim":
    malloc_trim()()
print(json.dumps({"kept": kept, "after": resident()["rss_anon"]}))
"""


def fragment(then: str) -> dict[str, int]:
    done = subprocess.run(
        [sys.executable, "-c", FRAGMENT, then], capture_output=True, text=True, check=True
    )
    figures: dict[str, int] = json.loads(done.stdout)
    return figures


@pytest.mark.skipif(malloc_trim() is None, reason="this C library has no malloc_trim")
def test_freed_blocks_stay_resident_until_trimmed() -> None:
    untrimmed, trimmed = fragment("wait"), fragment("trim")
    # ~190 MB were freed: glibc keeps them resident by itself; malloc_trim gives them back.
    assert untrimmed["after"] - untrimmed["kept"] > -(10 << 20)
    assert trimmed["kept"] - trimmed["after"] > 150 << 20


def test_the_trimmer_trims_every_interval_until_closed() -> None:
    calls = threading.Semaphore(0)

    def trim() -> bool:
        calls.release()
        return True

    trimmer = Trimmer(trim, interval=0.01).start()
    assert all(calls.acquire(timeout=10) for _ in range(3))
    trimmer.close()
    while calls.acquire(blocking=False):
        pass
    time.sleep(0.05)
    assert not calls.acquire(blocking=False)


def test_on_by_default_off_at_zero() -> None:
    with trimming(load_config(build_registry(), environ={}, defines=[])) as trimmer:
        assert trimmer is not None and trimmer.interval == 10.0
    defines = ["dora.worker.memory.trim.interval=0"]
    with trimming(load_config(build_registry(), environ={}, defines=defines)) as trimmer:
        assert trimmer is None
