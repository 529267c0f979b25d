"""The generic fsspec backend's own rules: the status a write answers when the file is deleted
or replaced right after it (the contract suite in test_adapter.py covers the rest)."""

import uuid
from collections.abc import Callable, Iterator

import fsspec
import pytest
from fsspec.spec import AbstractFileSystem

from ufs.adapter import Ufs
from ufs.deadline import Deadline, ThreadRunner
from ufs.generic import FsspecBackend
from ufs.status import UfsStatus


class _RacedBackend(FsspecBackend):
    """fsspec's memory filesystem with another party acting on the file (``race(path)``)
    once, just before the first status after a write is taken."""

    def __init__(self, race: Callable[[AbstractFileSystem, str], None]) -> None:
        super().__init__("memory", fsspec.filesystem("memory"), ThreadRunner(4))
        self._race: Callable[[AbstractFileSystem, str], None] | None = race

    def status(self, uri: str, deadline: Deadline) -> UfsStatus:
        race, self._race = self._race, None
        if race is not None:
            race(self.filesystem, self.path(uri))
        return super().status(uri, deadline)


def _delete(fs: AbstractFileSystem, path: str) -> None:
    fs.rm(path)


def _replace(fs: AbstractFileSystem, path: str) -> None:
    fs.pipe_file(path, b"someone else's, longer")


@pytest.mark.parametrize("race", [_delete, _replace], ids=["deleted", "replaced"])
@pytest.mark.parametrize("streamed", [False, True], ids=["bytes", "stream"])
def test_a_write_answers_the_bytes_it_wrote_when_the_file_changes_right_after(
    race: Callable[[AbstractFileSystem, str], None], streamed: bool
) -> None:
    uri = f"memory://raced-{uuid.uuid4().hex}/f"
    body: bytes | Iterator[bytes] = iter([b"wri", b"tten"]) if streamed else b"written"
    status = Ufs(backends={"memory": _RacedBackend(race)}).write(uri, body)
    assert (status.uri, status.size, status.is_dir) == (uri, 7, False)
    # A version no status of the file can have: the cache re-reads rather than trust it.
    assert status.version == f"7-{status.mtime_ns}"
    assert fsspec.filesystem("memory").exists(uri) == (race is _replace)


def test_a_write_answers_the_status_after_it_when_that_shows_the_write() -> None:
    uri = f"memory://raced-{uuid.uuid4().hex}/f"
    ufs = Ufs(backends={"memory": _RacedBackend(lambda fs, path: None)})
    assert ufs.write(uri, b"written") == ufs.status(uri)
