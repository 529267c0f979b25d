"""Directories and files made with exactly the modes asked for, whatever the umask."""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

import pytest

from pagestore import modes
from pagestore.api import PutResult
from pagestore.page import PageId
from tests.pagestore.support import PAGE_SIZE, content, make_options, open_local, uri


def test_made_directories_get_the_mode_asked_for_and_existing_ones_are_left_alone(
    umask_000: None, tmp_path: Path
) -> None:
    tmp_path.chmod(0o755)
    modes.make_dirs(tmp_path / "a" / "b", modes.SHARED_DIR)
    assert stat.S_IMODE((tmp_path / "a").stat().st_mode) == modes.SHARED_DIR
    assert stat.S_IMODE((tmp_path / "a" / "b").stat().st_mode) == modes.SHARED_DIR
    assert stat.S_IMODE(tmp_path.stat().st_mode) == 0o755


def test_files_get_exactly_the_mode_asked_for(umask_000: None, tmp_path: Path) -> None:
    modes.write_file(tmp_path / "f", b"data", modes.SHARED_FILE)
    os.close(modes.create(tmp_path / "g", os.O_RDONLY, modes.PRIVATE_FILE))
    assert stat.S_IMODE((tmp_path / "f").stat().st_mode) == modes.SHARED_FILE
    assert stat.S_IMODE((tmp_path / "g").stat().st_mode) == modes.PRIVATE_FILE


def test_a_page_directory_made_under_a_looser_umask_is_tightened_at_start(
    umask_000: None, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 36 item 11: a page directory made before the store set its modes (its
    directories 0777, its files 0666) stayed so, and anyone could plant a page in it."""
    options = make_options(tmp_path, pack_limit=PAGE_SIZE // 2)
    store = open_local(options)
    for n, size in enumerate((PAGE_SIZE, PAGE_SIZE // 4)):  # a page file and a packed page
        page_id = PageId(f"{n:02x}" * 32, "v", 0)
        assert store.put(page_id, content(page_id, size), uri(page_id)) is PutResult.OK
    store.close()
    root = tmp_path / "dir0"
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"not the store's")
    os.symlink(outside, root / "link")
    (root / "notes.txt").write_bytes(b"not the store's either")
    for path in [root, *root.rglob("*")]:
        if not path.is_symlink():
            path.chmod(0o777 if path.is_dir() else 0o666)
    outside.chmod(0o666)
    with caplog.at_level(logging.WARNING, logger="pagestore"):
        store = open_local(options)
    try:
        assert [store.get(PageId(f"{n:02x}" * 32, "v", 0)) is not None for n in (0, 1)] == [
            True,
            True,
        ]
    finally:
        store.close()
    found = {
        str(p.relative_to(root)): stat.S_IMODE(p.lstat().st_mode)
        for p in [root, *root.rglob("*")]
        if not p.is_symlink()
    }
    assert found.pop("notes.txt") == 0o666  # not a name the store gives: left as it is
    assert set(found.values()) <= {modes.SHARED_DIR, modes.SHARED_FILE}, found
    assert any(p.endswith(".pack") for p in found) and len(found) > 8
    assert stat.S_IMODE(outside.stat().st_mode) == 0o666  # not followed
    logged = [r.getMessage() for r in caplog.records if "looser umask" in r.getMessage()]
    assert len(logged) == 1 and str(root) in logged[0]
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="pagestore"):
        open_local(options).close()
    assert not any("looser umask" in r.getMessage() for r in caplog.records)  # once
