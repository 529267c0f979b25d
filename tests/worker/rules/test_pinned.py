"""A rule's ``pin`` applied to pages cached already: restored ones once the restore is done,
and on a reload (a new ``pin`` pins what is cached under it, a dropped one unpins it, but not a
``dora fs pin``), within ``pin.max``."""

import logging
import time
from pathlib import Path

import pytest

from pagestore.api import PageStore
from pagestore.page import PageId
from tests.pagestore.support import PAGE_SIZE, content, make_options, open_local
from ufs.status import file_id
from worker.rules.live import Rules
from worker.rules.pinned import RulePins
from worker.rules.ruleset import Defaults

GOLD = "s3://lake/gold/a.parquet"
OTHER = "s3://lake/other/b.parquet"


def store_file(store: PageStore, uri: str, pages: int) -> None:
    fid = file_id(uri)
    for index in range(pages):
        page_id = PageId(fid, "v1", index)
        store.put(page_id, content(page_id), uri)


def pinned_pages(store: PageStore) -> int:
    return store.stats().pinned_bytes // PAGE_SIZE


def wait_pinned(store: PageStore, pages: int) -> None:
    """Wait until ``pages`` pages are pinned (a reload applies its pins in another thread)."""
    deadline = time.monotonic() + 10
    while pinned_pages(store) != pages and time.monotonic() < deadline:
        time.sleep(0.01)
    assert pinned_pages(store) == pages


def rules_file(tmp_path: Path, text: str) -> Rules:
    path = tmp_path / "rules"
    path.write_text(text)
    return Rules((), Defaults(), path, clock=lambda: 0.0)


def test_restored_pages_of_a_pinning_rule_are_pinned(tmp_path: Path) -> None:
    options = make_options(tmp_path / "pages", pages=16)
    rules = rules_file(tmp_path, "s3://lake/gold/** pin\n")
    first = open_local(options)
    store_file(first, GOLD, 3)
    store_file(first, OTHER, 3)
    first.close()
    store = open_local(options)  # what a restart restores, nothing pinned yet
    try:
        assert pinned_pages(store) == 0
        assert RulePins(rules, store, lambda uri: False).apply() == 1
        assert pinned_pages(store) == 3
    finally:
        store.close()


def test_a_reload_pins_and_unpins_but_keeps_the_pins_made_by_hand(tmp_path: Path) -> None:
    store = open_local(make_options(tmp_path / "pages", pages=16))
    rules = rules_file(tmp_path, "s3://lake/** max-age=1s\n")
    by_hand = {OTHER}
    try:
        RulePins(rules, store, by_hand.__contains__).start()
        store_file(store, GOLD, 2)
        store_file(store, OTHER, 3)
        store.pin(file_id(OTHER))  # as `dora fs pin` does
        assert pinned_pages(store) == 3
        rules.path.write_text("s3://lake/** pin\n")  # type: ignore[union-attr]
        assert rules.reload()
        wait_pinned(store, 5)
        rules.path.write_text("s3://lake/** max-age=1s\n")  # type: ignore[union-attr]
        assert rules.reload()
        wait_pinned(store, 3)  # the pin by hand stays
    finally:
        store.close()


def test_a_rule_past_the_bound_pins_what_fits_and_says_so_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = open_local(make_options(tmp_path / "pages", pages=8))  # the bound: 4 pages
    rules = rules_file(tmp_path, "s3://lake/gold/** pin\n")
    try:
        for name in ("a", "b", "c"):
            store_file(store, f"s3://lake/gold/{name}", 2)
        with caplog.at_level(logging.WARNING, logger="worker.rules.pinned"):
            assert RulePins(rules, store, lambda uri: False).apply() == 3
        assert pinned_pages(store) == 4
        warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
        assert len(warnings) == 1
        assert "s3://lake/gold/** pin" in warnings[0].getMessage()
        assert "dora.worker.page.store.pin.max" in warnings[0].getMessage()
    finally:
        store.close()
