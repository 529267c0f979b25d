"""A worker killed mid-write, round after round: the reopened store never serves a torn page,
whether pages are in files of their own or in packs."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from pagestore.layout import TEMP_SUFFIX
from pagestore.page import PageId
from tests.pagestore.support import content, make_options, open_local, stored_pages

PAGE_SIZE = 256 << 10
PAGES = 24  # capacity, in pages: the writer also evicts (and unlinks) while it is killed
FILES = [f"{n:02x}" * 32 for n in range(6)]
INDICES = range(8)

# The writer stores pages of FILES, of ``size`` bytes, until it is killed, saying how many it has
# stored so far. Given a positive ``hang_at``, its write of that page (or batch of pages in a
# pack) stops halfway (a temporary file, or the pack, holds half of what was to be written) and
# waits there to be killed.
WRITER = """
import os, sys, threading
from pathlib import Path
import pagestore.disk
from pagestore.page import PageId
from tests.pagestore.support import content, make_options, open_local, uri
from tests.pagestore.test_store_crash import FILES, INDICES, PAGE_SIZE, PAGES

root, step, hang_at = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
size, pack_limit, capacity = int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
writes = 0

def write_all(fd, parts, offset):
    global writes
    writes += 1
    data = b"".join(parts)
    os.pwrite(fd, data[: len(data) // 2], offset)
    if writes == hang_at:
        print("mid-write", flush=True)
        threading.Event().wait()
    os.pwrite(fd, data[len(data) // 2 :], offset + len(data) // 2)

pagestore.disk._write_all = write_all
options = make_options(root, capacity, page_size=PAGE_SIZE, pack_limit=pack_limit)
store = open_local(options)
print("ready", flush=True)
while True:
    for file_id in FILES:
        for index in INDICES:
            page_id = PageId(file_id, "v", (index * step) % len(INDICES))
            store.put(page_id, content(page_id, size), uri(page_id))
            print("put", flush=True)
"""
# Whole pages are written to files of their own; pages of a quarter page to packs. Either way
# the store holds half the pages written, so it keeps evicting.
LAYOUTS = {"page files": (PAGE_SIZE, 0, PAGES), "packs": (PAGE_SIZE // 4, PAGE_SIZE, PAGES // 4)}


def run_and_kill(root: Path, round_number: int, layout: tuple[int, int, int]) -> None:
    """Run a writer and kill it: in even rounds in the middle of a page write, in odd rounds
    wherever it happens to be after some puts."""
    puts = 5 + 9 * round_number
    hang_at = puts if round_number % 2 == 0 else -1
    step = str(round_number * 2 + 1)
    child = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(root), step, str(hang_at), *map(str, layout)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).parents[2],
    )
    assert child.stdout is not None
    lines = iter(child.stdout.readline, "")
    assert next(lines).strip() == "ready"
    target, remaining = ("mid-write", 1) if hang_at > 0 else ("put", puts)
    for line in lines:
        remaining -= line.strip() == target
        if remaining == 0:
            break
    child.send_signal(signal.SIGKILL)
    child.wait()
    child.stdout.close()


def tear_a_page(root: Path, rng: random.Random) -> None:
    """Truncate one page file in place, as a power cut after the rename could leave it, or cut
    the end of a pack, as a power cut amid appends could."""
    pages = sorted(
        p for p in root.rglob("*.*") if p.name.endswith(".pack") or p.suffix[1:].isdigit()
    )
    if pages:
        victim = rng.choice(pages)
        size = victim.stat().st_size
        os.truncate(victim, max(0, size - 1000) if victim.suffix == ".pack" else size // 2)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_killed_writers_never_leave_a_page_that_is_served_torn(tmp_path: Path, layout: str) -> None:
    rng = random.Random(4)
    size, pack_limit, capacity = LAYOUTS[layout]
    options = make_options(tmp_path, capacity, page_size=PAGE_SIZE, pack_limit=pack_limit)
    for round_number in range(6):
        run_and_kill(tmp_path, round_number, LAYOUTS[layout])
        tear_a_page(tmp_path, rng)
        store = open_local(options)
        try:
            served = 0
            for file_id in FILES:
                for index in INDICES:
                    page_id = PageId(file_id, "v", index)
                    data = store.get(page_id)
                    assert data is None or data == content(page_id, size)
                    served += data is not None
            assert served > 0
            assert store.used_bytes <= store.capacity_bytes
            assert list(tmp_path.rglob(f"*{TEMP_SUFFIX}")) == []
            assert len(stored_pages(tmp_path)) == store.page_count
        finally:
            store.close()
