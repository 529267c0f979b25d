"""Second-read admission's memory: pages read before within the window, bounded."""

from pagestore.page import PageId
from worker.rules.admission import FirstReads


def _pages(*indices: int) -> list[PageId]:
    return [PageId("f", "v1", i) for i in indices]


def test_a_range_is_admitted_when_each_page_was_read_within_the_window() -> None:
    now = [0.0]
    reads = FirstReads(clock=lambda: now[0])
    assert not reads.read_again(_pages(0, 1), window=1_000)
    now[0] = 500
    assert reads.read_again(_pages(0, 1), window=1_000)
    assert not reads.read_again(_pages(1, 2), window=1_000)  # page 2 is new
    now[0] = 1_400  # pages 0 and 1 were first read at 0: their window is over
    assert not reads.read_again(_pages(0), window=1_000)
    assert reads.read_again(_pages(2), window=1_000)  # read at 500


def test_another_version_is_another_page() -> None:
    reads = FirstReads(clock=lambda: 0.0)
    assert not reads.read_again([PageId("f", "v1", 0)], window=1_000)
    assert not reads.read_again([PageId("f", "v2", 0)], window=1_000)


def test_the_oldest_pages_are_forgotten_beyond_the_bound() -> None:
    reads = FirstReads(limit=2, clock=lambda: 0.0)
    reads.read_again(_pages(0, 1, 2), window=1_000)
    assert len(reads) == 2
    assert not reads.read_again(_pages(0), window=1_000)
