"""A worker killed mid-write, round after round: the reopened store never serves a torn page."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
from pathlib import Path

from pagestore.layout import TEMP_SUFFIX
from pagestore.page import PageId
from tests.pagestore.support import content, make_options, open_local

PAGE_SIZE = 256 << 10
PAGES = 24  # capacity, in pages: the writer also evicts (and unlinks) while it is killed
FILES = [f"{n:02x}" * 32 for n in range(6)]
INDICES = range(8)

# The writer stores pages of FILES until it is killed, saying how many it has stored so far.
# Given a positive ``hang_at``, its write of that page stops halfway (the temporary file holds a
# header and half the data) and waits there to be killed.
WRITER = """
import os, sys, threading
from pathlib import Path
import pagestore.disk
from pagestore.page import PageId
from tests.pagestore.support import content, make_options, open_local, uri
from tests.pagestore.test_store_crash import FILES, INDICES, PAGE_SIZE, PAGES

root, step, hang_at = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
writes = 0

def write_all(fd, header, data):
    global writes
    writes += 1
    os.write(fd, header)
    os.write(fd, data[: len(data) // 2])
    if writes == hang_at:
        print("mid-write", flush=True)
        threading.Event().wait()
    os.write(fd, data[len(data) // 2 :])

pagestore.disk._write_all = write_all
store = open_local(make_options(root, PAGES, page_size=PAGE_SIZE))
print("ready", flush=True)
while True:
    for file_id in FILES:
        for index in INDICES:
            page_id = PageId(file_id, "v", (index * step) % len(INDICES))
            store.put(page_id, content(page_id, PAGE_SIZE), uri(page_id))
            print("put", flush=True)
"""


def run_and_kill(root: Path, round_number: int) -> None:
    """Run a writer and kill it: in even rounds in the middle of a page write, in odd rounds
    wherever it happens to be after some puts."""
    puts = 5 + 9 * round_number
    hang_at = puts if round_number % 2 == 0 else -1
    step = str(round_number * 2 + 1)
    child = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(root), step, str(hang_at)],
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
    """Truncate one page file in place, as a power cut after the rename could leave it."""
    pages = sorted(p for p in root.rglob("*.*.*") if not p.name.endswith(TEMP_SUFFIX))
    if pages:
        victim = rng.choice(pages)
        os.truncate(victim, victim.stat().st_size // 2)


def test_killed_writers_never_leave_a_page_that_is_served_torn(tmp_path: Path) -> None:
    rng = random.Random(4)
    options = make_options(tmp_path, PAGES, page_size=PAGE_SIZE)
    for round_number in range(6):
        run_and_kill(tmp_path, round_number)
        tear_a_page(tmp_path, rng)
        store = open_local(options)
        try:
            served = 0
            for file_id in FILES:
                for index in INDICES:
                    page_id = PageId(file_id, "v", index)
                    data = store.get(page_id)
                    assert data is None or data == content(page_id, PAGE_SIZE)
                    served += data is not None
            assert served > 0
            assert store.used_bytes <= store.capacity_bytes
            assert list(tmp_path.rglob(f"*{TEMP_SUFFIX}")) == []
            assert len(list(tmp_path.rglob("*.*.*"))) == store.page_count
        finally:
            store.close()
