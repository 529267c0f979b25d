"""The local backend's own rules for symlinks and for the status a write answers (the contract
suite covers the rest)."""

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ufs.adapter import Ufs
from ufs.deadline import Deadline, ThreadRunner
from ufs.errors import UfsInvalidPath, UfsVersionChanged
from ufs.local import LocalBackend, path_of
from ufs.status import UfsStatus


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "d" / "real").mkdir(parents=True)
    (tmp_path / "d" / "real" / "f").write_bytes(b"12345")
    (tmp_path / "d" / "dirlink").symlink_to(tmp_path / "d" / "real")
    (tmp_path / "d" / "filelink").symlink_to(tmp_path / "d" / "real" / "f")
    (tmp_path / "d" / "dangling").symlink_to(tmp_path / "missing")
    (tmp_path / "d" / "loop").symlink_to("loop")
    return tmp_path


def test_links_are_followed_alike_by_status_and_listing(tree: Path) -> None:
    ufs = Ufs()
    listed = {s.name: s for s in ufs.list(f"file://{tree}/d")}
    # A dangling link and a loop name nothing that could be served.
    assert sorted(listed) == ["dirlink", "filelink", "real"]
    assert listed["dirlink"].is_dir
    assert (listed["filelink"].size, listed["filelink"].is_dir) == (5, False)
    assert listed["filelink"] == ufs.status(f"file://{tree}/d/filelink")
    assert ufs.read(f"file://{tree}/d/filelink", 1, 3) == b"234"


def test_a_loop_is_an_invalid_path(tree: Path) -> None:
    with pytest.raises(UfsInvalidPath, match="symbolic links"):
        Ufs().status(f"file://{tree}/d/loop")


def test_deleting_a_link_removes_the_link_only(tree: Path) -> None:
    ufs = Ufs()
    ufs.delete(f"file://{tree}/d/filelink")
    ufs.delete(f"file://{tree}/d/dirlink", recursive=True)
    assert sorted(p.name for p in (tree / "d").iterdir()) == ["dangling", "loop", "real"]
    assert (tree / "d" / "real" / "f").read_bytes() == b"12345"


def test_a_recursive_delete_does_not_follow_links(tree: Path) -> None:
    (tree / "d" / "real" / "back").symlink_to(tree / "d")
    Ufs().delete(f"file://{tree}/d/real", recursive=True)
    assert sorted(p.name for p in (tree / "d").iterdir()) == [
        "dangling", "dirlink", "filelink", "loop"
    ]  # fmt: skip


def test_a_pinned_read_checks_the_file_it_reads_not_the_name(tree: Path) -> None:
    """The name swapped for a link to another file of the same size after the status was
    taken: the read is a version change, not the other file's bytes."""
    ufs = Ufs()
    pinned = ufs.status(f"file://{tree}/d/real/f")
    (tree / "other").write_bytes(b"54321")
    (tree / "d" / "real" / "f").unlink()
    (tree / "d" / "real" / "f").symlink_to(tree / "other")
    with pytest.raises(UfsVersionChanged):
        ufs.read(f"file://{tree}/d/real/f", 0, 5, version=pinned.version)


class _RacedBackend(LocalBackend):
    """The local backend with another party acting on the file (``race(path)``) as soon as
    each write has put it in place: a concurrent delete or replace, landed deterministically
    between the write and anything after it. ``before`` is the file as written, taken just
    before the race."""

    def __init__(self, race: Callable[[str], None]) -> None:
        super().__init__(ThreadRunner(4))
        self._race = race
        self.before: list[os.stat_result] = []

    def write(self, uri: str, data: bytes, deadline: Deadline) -> UfsStatus:
        written = super().write(uri, data, deadline)
        self._raced(path_of(uri))
        return written

    def write_stream(self, uri: str, chunks: Iterator[bytes], step: float) -> UfsStatus:
        written = super().write_stream(uri, chunks, step)
        self._raced(path_of(uri))
        return written

    def _raced(self, path: str) -> None:
        self.before.append(os.stat(path))
        self._race(path)


def _replace(path: str) -> None:
    Path(path).write_bytes(b"someone else's, longer")


@pytest.mark.parametrize("race", [os.unlink, _replace], ids=["deleted", "replaced"])
@pytest.mark.parametrize("streamed", [False, True], ids=["bytes", "stream"])
def test_a_write_answers_what_it_wrote_whatever_happens_to_the_file_next(
    tmp_path: Path, race: Callable[[str], None], streamed: bool
) -> None:
    backend = _RacedBackend(race)
    uri = f"file://{tmp_path}/f"
    body: bytes | Iterator[bytes] = iter([b"wri", b"tten"]) if streamed else b"written"
    status = Ufs(backends={"file": backend}).write(uri, body)
    (before,) = backend.before
    mtime_ns = before.st_mtime_ns
    assert status == UfsStatus(uri, "f", False, 7, mtime_ns, f"7-{mtime_ns}", None)
    assert os.path.exists(tmp_path / "f") == (race is _replace)  # the race really happened
