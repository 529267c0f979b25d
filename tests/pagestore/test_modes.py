"""Directories and files made with exactly the modes asked for, whatever the umask."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from pagestore import modes


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
