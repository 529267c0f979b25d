"""The local backend's own rules for symlinks, for the status a write answers and for a batch
read (one hop to a UFS thread, one deadline); the contract suite covers the rest."""

import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest

from ufs.adapter import Ufs, UfsOptions
from ufs.deadline import Deadline, ThreadRunner
from ufs.errors import (
    StorageUnavailable,
    UfsError,
    UfsInvalidPath,
    UfsIsADirectory,
    UfsVersionChanged,
)
from ufs.local import LocalBackend, path_of
from ufs.status import UfsStatus

T = TypeVar("T")


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

    def write_stream(
        self, uri: str, chunks: Iterator[bytes], step: Callable[[], Deadline]
    ) -> UfsStatus:
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


def _swapped_for_a_fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def _swapped_for_a_directory(path: Path) -> None:
    path.unlink()
    path.mkdir()


@pytest.mark.parametrize(
    ("swap", "error"),
    [(_swapped_for_a_fifo, UfsInvalidPath), (_swapped_for_a_directory, UfsIsADirectory)],
    ids=["fifo", "directory"],
)
def test_read_files_refuses_what_a_read_refuses(
    tmp_path: Path, swap: Callable[[Path], None], error: type[UfsError]
) -> None:
    """A listed file replaced by something that is no regular file before the batch reads it:
    that file's outcome is the error a read raises (a FIFO is never opened for reading, so no
    thread waits for a writer), and the rest of the batch is read."""
    ufs = Ufs()
    listed = ufs.write(f"file://{tmp_path}/swapped", b"listed")
    other = ufs.write(f"file://{tmp_path}/other", b"other")
    swap(tmp_path / "swapped")
    outcome, data = ufs.read_files([listed, other])
    assert isinstance(outcome, error) and data == b"other"
    with pytest.raises(error, match=re.escape(str(outcome))):
        ufs.read(listed.uri, 0, listed.size, version=listed.version)


class _CountingRunner(ThreadRunner):
    def __init__(self) -> None:
        super().__init__(threads=1)
        self.calls = 0

    def run(self, fn: Callable[[], T], deadline: Deadline) -> T:
        self.calls += 1
        return super().run(fn, deadline)


def test_read_files_hands_a_local_batch_to_one_thread_under_one_deadline(
    tmp_path: Path,
) -> None:
    """The point of a batch: one hop to a UFS thread for all its files. A hung mount (the
    one thread blocked in a real read of a pipe) fails the whole batch at the deadline, as
    any call fails."""
    runner = _CountingRunner()
    ufs = Ufs(UfsOptions(call_deadline_ms=300), backends={"file": LocalBackend(runner)})
    files = [ufs.write(f"file://{tmp_path}/f{n}", bytes([n]) * 10) for n in range(20)]
    runner.calls = 0
    assert ufs.read_files(files) == [bytes([n]) * 10 for n in range(20)]
    assert runner.calls == 1
    read_end, write_end = os.pipe()
    try:
        runner.spawn(lambda: os.read(read_end, 1))  # a hung mount holds the one thread
        deadline = r"read .*/f0 and 19 more within 0.3s \(dora.ufs.call.deadline\)"
        with pytest.raises(StorageUnavailable, match=deadline) as raised:
            ufs.read_files(files)
        assert raised.value.retry_after == 1
        os.write(write_end, b"x")  # the storage answers again
        assert ufs.read_files(files[:1]) == [bytes(10)]
    finally:
        os.close(write_end)
        os.close(read_end)
