"""LISTSTATUS_BATCH paging: a listing taken once and paged by name, kept for a while and for a
bounded number of directories (a fake clock instead of sleeping)."""

from typing import Any

import pytest

from ufs.status import UfsStatus, file_status
from worker.api import webhdfs_listing
from worker.api.webhdfs_listing import ListingPages


class Lister:
    """Lists a directory of ``names``, counting the listings."""

    def __init__(self, *names: str) -> None:
        self.names = list(names)
        self.listings = 0

    def __call__(self) -> list[UfsStatus]:
        self.listings += 1
        return [file_status(f"s3://b/d/{n}", 1, 0, "e") for n in self.names]


def names(answer: dict[str, Any]) -> tuple[list[str], int]:
    listing = answer["DirectoryListing"]
    entries = listing["partialListing"]["FileStatuses"]["FileStatus"]
    return [e["pathSuffix"] for e in entries], listing["remainingEntries"]


def test_a_listing_is_taken_once_and_paged_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(webhdfs_listing, "BATCH_SIZE", 2)
    pages = ListingPages()
    lister = Lister("c", "a", "日本", "b", "z")
    assert names(pages.page("s3://b/d", None, lister)) == (["a", "b"], 3)
    assert names(pages.page("s3://b/d", "b", lister)) == (["c", "z"], 1)
    # After a name that is not in the listing (deleted meanwhile): the next ones in order.
    assert names(pages.page("s3://b/d", "d", lister)) == (["z", "日本"], 0)
    assert names(pages.page("s3://b/d", "日本", lister)) == ([], 0)
    assert lister.listings == 1


def test_continuations_list_again_once_the_listing_expired_or_was_evicted() -> None:
    now = [0.0]
    pages = ListingPages(keep_s=60, kept=1, clock=lambda: now[0])
    first, second = Lister("a", "b"), Lister("x")
    pages.page("s3://b/d", None, first)
    now[0] = 61
    assert names(pages.page("s3://b/d", "a", first)) == (["b"], 0)
    assert first.listings == 2
    pages.page("s3://b/other", None, second)  # only one listing is kept
    pages.page("s3://b/d", "a", first)
    assert first.listings == 3
