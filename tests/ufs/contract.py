"""One contract suite for the UFS adapter, run against every backend: subclass it and provide
``ufs`` (an adapter) and ``root`` (a fresh, empty directory URI) fixtures, plus ``write_outside``
(bytes written straight to the backend, bypassing the adapter)."""

import os
from collections.abc import Callable, Iterator

import pytest

from ufs.adapter import Ufs
from ufs.backend import WRITE_CHUNK
from ufs.deadline import Deadline
from ufs.errors import (
    UfsError,
    UfsIsADirectory,
    UfsNotADirectory,
    UfsNotFound,
    UfsUnsupported,
    UfsVersionChanged,
)

WriteOutside = Callable[[str, bytes], None]


class UfsContract:
    def test_write_status_and_ranged_reads(self, ufs: Ufs, root: str) -> None:
        status = ufs.write(f"{root}/a/b.bin", bytes(range(256)) * 4)
        assert status.uri == f"{root}/a/b.bin"
        assert status.name == "b.bin"
        assert (status.size, status.is_dir) == (1024, False)
        assert status.version
        assert ufs.status(f"{root}/a/b.bin") == status
        assert ufs.read(f"{root}/a/b.bin", 10, 5) == bytes(range(10, 15))
        assert ufs.read(f"{root}/a/b.bin", 1020, 100) == bytes(range(252, 256))
        with ufs.open(f"{root}/a/b.bin") as handle:
            assert handle.read() == bytes(range(256)) * 4

    def test_streamed_write(self, ufs: Ufs, root: str) -> None:
        status = ufs.write(f"{root}/s.bin", iter([b"ab", b"cd", b"ef"]))
        assert status.size == 6
        assert ufs.read(f"{root}/s.bin", 0, 6) == b"abcdef"

    def test_streamed_write_of_several_parts_and_open(self, ufs: Ufs, root: str) -> None:
        body = os.urandom(WRITE_CHUNK + 12345)
        status = ufs.write(
            f"{root}/big.bin", (body[i : i + (1 << 20)] for i in range(0, len(body), 1 << 20))
        )
        assert status.size == len(body)
        assert ufs.status(f"{root}/big.bin") == status
        with ufs.open(f"{root}/big.bin") as handle:
            assert handle.read(10) == body[:10]
            assert handle.read() == body[10:]

    def test_a_request_deadline_with_time_to_spare_changes_nothing(
        self, ufs: Ufs, root: str
    ) -> None:
        deadline = Deadline(60)
        ufs.mkdir(f"{root}/d", deadline=deadline)
        written = ufs.write(f"{root}/d/f", b"abc", deadline=deadline)
        assert ufs.write(f"{root}/d/s", iter([b"a", b"b"]), deadline=deadline).size == 2
        assert ufs.status(f"{root}/d/f", deadline=deadline) == written
        assert ufs.read(f"{root}/d/f", 1, 5, written.version, deadline=deadline) == b"bc"
        assert ufs.read_files([written], deadline=deadline) == [b"abc"]
        moved = ufs.rename(f"{root}/d/s", f"{root}/d/t", deadline=deadline)
        assert [s.uri for s in ufs.list(f"{root}/d", deadline=deadline)] == [written.uri, moved.uri]
        ufs.delete(f"{root}/d", recursive=True, deadline=deadline)
        with pytest.raises(UfsNotFound):
            ufs.status(f"{root}/d/f", deadline=deadline)

    def test_a_failed_stream_leaves_the_old_file(self, ufs: Ufs, root: str) -> None:
        old = ufs.write(f"{root}/keep.bin", b"old")

        def body() -> Iterator[bytes]:
            yield os.urandom(WRITE_CHUNK + 1)
            raise ConnectionResetError("the client went away")

        with pytest.raises(UfsError):
            ufs.write(f"{root}/keep.bin", body())
        assert ufs.status(f"{root}/keep.bin") == old
        assert ufs.read(f"{root}/keep.bin", 0, 10) == b"old"

    def test_an_append_is_exact_or_refused_and_a_failed_one_changes_nothing(
        self, ufs: Ufs, root: str
    ) -> None:
        uri = f"{root}/log.txt"
        ufs.write(uri, b"one")
        try:
            appended = ufs.append(uri, iter([b"two", b"three"]))
        except UfsUnsupported:
            assert ufs.read(uri, 0, 100) == b"one"  # a store with no exact way refuses
            return
        assert appended == ufs.status(uri) and appended.size == 11
        assert ufs.read(uri, 0, 100) == b"onetwothree"

        def body() -> Iterator[bytes]:
            yield b"four"
            raise ConnectionResetError("the client went away")

        with pytest.raises(UfsError):
            ufs.append(uri, body())
        assert ufs.status(uri) == appended
        assert ufs.read(uri, 0, 100) == b"onetwothree"
        ufs.write(f"{root}/empty", b"")
        assert ufs.append(f"{root}/empty", iter([b"x"])).size == 1
        with pytest.raises(UfsNotFound):
            ufs.append(f"{root}/missing", iter([b"x"]))

    def test_list_gives_children_with_full_status(self, ufs: Ufs, root: str) -> None:
        ufs.write(f"{root}/d/x.txt", b"xx")
        ufs.write(f"{root}/d/y.txt", b"yyy")
        ufs.write(f"{root}/d/sub/z.txt", b"z")
        children = ufs.list(f"{root}/d")
        assert [c.uri for c in children] == [f"{root}/d/sub", f"{root}/d/x.txt", f"{root}/d/y.txt"]
        assert [c.is_dir for c in children] == [True, False, False]
        assert children[2].size == 3
        assert children[2] == ufs.status(f"{root}/d/y.txt")
        assert sorted(s.uri for s in ufs.walk_files(f"{root}/d")) == [
            f"{root}/d/sub/z.txt",
            f"{root}/d/x.txt",
            f"{root}/d/y.txt",
        ]

    def test_not_found_and_not_a_directory(self, ufs: Ufs, root: str) -> None:
        with pytest.raises(UfsNotFound, match="not found"):
            ufs.status(f"{root}/missing")
        with pytest.raises(UfsNotFound):
            ufs.read(f"{root}/missing", 0, 1)
        ufs.write(f"{root}/f", b"1")
        with pytest.raises(UfsNotADirectory):
            ufs.list(f"{root}/f")

    def test_overwrite_changes_version(self, ufs: Ufs, root: str) -> None:
        first = ufs.write(f"{root}/v", b"one")
        second = ufs.write(f"{root}/v", b"two!")
        assert first.version != second.version
        assert ufs.status(f"{root}/v").version == second.version

    def test_rename_file_and_directory(self, ufs: Ufs, root: str) -> None:
        ufs.write(f"{root}/r/a.txt", b"a")
        moved = ufs.rename(f"{root}/r/a.txt", f"{root}/r/b.txt")
        assert moved.uri == f"{root}/r/b.txt"
        with pytest.raises(UfsNotFound):
            ufs.status(f"{root}/r/a.txt")
        ufs.rename(f"{root}/r", f"{root}/q")
        assert ufs.read(f"{root}/q/b.txt", 0, 1) == b"a"
        with pytest.raises(UfsNotFound):
            ufs.rename(f"{root}/nothing", f"{root}/else")

    def test_delete_file_and_recursive(self, ufs: Ufs, root: str) -> None:
        ufs.write(f"{root}/del/a", b"a")
        ufs.write(f"{root}/del/sub/b", b"b")
        ufs.delete(f"{root}/del/a")
        with pytest.raises(UfsNotFound):
            ufs.status(f"{root}/del/a")
        with pytest.raises(UfsIsADirectory, match="needs recursive"):
            ufs.delete(f"{root}/del")
        ufs.delete(f"{root}/del", recursive=True)
        with pytest.raises(UfsNotFound):
            ufs.status(f"{root}/del/sub/b")
        with pytest.raises(UfsNotFound):
            ufs.delete(f"{root}/del/a")

    def test_outside_write_is_visible_at_once(
        self, ufs: Ufs, root: str, write_outside: WriteOutside
    ) -> None:
        ufs.write(f"{root}/o/first", b"1")
        assert [s.name for s in ufs.list(f"{root}/o")] == ["first"]
        write_outside(f"{root}/o/second", b"22")
        assert [s.name for s in ufs.list(f"{root}/o")] == ["first", "second"]
        assert ufs.status(f"{root}/o/second").size == 2
        write_outside(f"{root}/o/second", b"333")
        assert ufs.read(f"{root}/o/second", 0, 10) == b"333"

    def test_files_read_whole_together_each_with_its_own_outcome(
        self, ufs: Ufs, root: str, write_outside: WriteOutside
    ) -> None:
        kept = ufs.write(f"{root}/w/kept", b"kept bytes")
        changed = ufs.write(f"{root}/w/changed", b"old")
        gone = ufs.write(f"{root}/w/gone", b"soon gone")
        empty = ufs.write(f"{root}/w/empty", b"")
        write_outside(f"{root}/w/changed", b"new and longer")
        ufs.delete(gone.uri)
        outcomes = ufs.read_files([kept, changed, gone, empty])
        assert outcomes[0] == b"kept bytes" and outcomes[3] == b""
        assert isinstance(outcomes[1], UfsVersionChanged)
        assert isinstance(outcomes[2], (UfsNotFound, UfsVersionChanged))
        assert ufs.read_files([]) == []

    def test_read_pinned_to_version(self, ufs: Ufs, root: str, write_outside: WriteOutside) -> None:
        old = ufs.write(f"{root}/p", b"old content")
        assert ufs.read(f"{root}/p", 0, 3, version=old.version) == b"old"
        write_outside(f"{root}/p", b"new content, longer")
        with pytest.raises(UfsVersionChanged, match="changed during the read"):
            ufs.read(f"{root}/p", 0, 3, version=old.version)
