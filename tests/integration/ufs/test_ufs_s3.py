"""The UFS contract against a real S3 server (SeaweedFS), a frozen one (SIGSTOP), and writes
raced by a second client."""

import dataclasses
import hashlib
import os
from collections.abc import Callable, Iterator

import pytest
import s3fs

from tests.integration.conftest import frozen
from tests.ufs.contract import UfsContract, WriteOutside
from ufs.adapter import Ufs, UfsOptions
from ufs.deadline import Deadline, ThreadRunner
from ufs.errors import StorageUnavailable, UfsNotFound
from ufs.kinds.s3 import S3Options
from ufs.s3 import PART_SIZE, S3Backend
from ufs.status import UfsStatus
from worker.devlab.local.s3 import ACCESS_KEY, SECRET_KEY, LocalS3


class TestSeaweedFS(UfsContract):
    @pytest.fixture
    def ufs(self, s3_ufs: Ufs) -> Ufs:
        return s3_ufs

    @pytest.fixture
    def root(self, s3_root: str) -> str:
        return s3_root

    @pytest.fixture
    def write_outside(self, s3_raw: s3fs.S3FileSystem) -> WriteOutside:
        def write(uri: str, data: bytes) -> None:
            s3_raw.pipe_file(uri.removeprefix("s3://"), data)

        return write


def test_version_is_the_etag(s3_ufs: Ufs, s3_root: str) -> None:
    status = s3_ufs.write(f"{s3_root}/e", b"hello")
    assert status.version == "5d41402abc4b2a76b9719d911017c592"  # md5("hello")
    assert status.content_hash == status.version


def test_missing_bucket_is_not_found(s3_ufs: Ufs) -> None:
    with pytest.raises(UfsNotFound):
        s3_ufs.status("s3://no-such-bucket-here/k")


@pytest.mark.integration
def test_a_frozen_s3_is_unavailable_at_the_deadline_then_serves_again(
    private_s3: LocalS3,
) -> None:
    options = UfsOptions(
        call_deadline_ms=2000,
        kinds=(S3Options(private_s3.endpoint, None, ACCESS_KEY, SECRET_KEY),),
    )
    ufs = Ufs(options)
    # Set up under the default deadline: the server's first answer after its start took over
    # 2 s once on a loaded machine, and that is not what this test is about.
    written = Ufs(dataclasses.replace(options, call_deadline_ms=UfsOptions.call_deadline_ms)).write(
        "s3://private/d/a", b"hello"
    )
    big = os.urandom(PART_SIZE + 1)
    calls: dict[str, Callable[[], object]] = {
        "status": lambda: ufs.status("s3://private/d/a"),
        "list": lambda: ufs.list("s3://private/d"),
        "read": lambda: ufs.read("s3://private/d/a", 0, 5),
        "pinned read": lambda: ufs.read("s3://private/d/a", 0, 5, version=written.version),
        "write": lambda: ufs.write("s3://private/d/b", b"bytes"),
        "streamed write": lambda: ufs.write("s3://private/d/c", iter([big[:10], big[10:]])),
    }
    with frozen(private_s3):
        for what, call in calls.items():
            with pytest.raises(StorageUnavailable, match="within 2s") as raised:
                call()
            assert raised.value.retry_after == 2, what
    assert ufs.read("s3://private/d/a", 0, 5, version=written.version) == b"hello"
    assert ufs.write("s3://private/d/e", iter([big])).size == len(big)
    assert ufs.read("s3://private/d/e", PART_SIZE - 2, 10) == big[PART_SIZE - 2 :]
    assert "e" in [s.name for s in ufs.list("s3://private/d")]


class _RacedS3(S3Backend):
    """The S3 backend with a second client's request (``race(key)``) landing once, right
    after a write's PUT and before anything the backend asks next."""

    def __init__(self, options: UfsOptions, race: Callable[[str], None]) -> None:
        super().__init__("s3", options, ThreadRunner(4))
        self._race: Callable[[str], None] | None = race

    def status(self, uri: str, deadline: Deadline) -> UfsStatus:
        race, self._race = self._race, None
        if race is not None:
            race(self.path(uri))
        return super().status(uri, deadline)


@pytest.mark.parametrize("what", ["deleted", "replaced"])
@pytest.mark.parametrize(
    "body",
    [
        pytest.param(b"written", id="put"),
        pytest.param(b"x" * PART_SIZE + b"tail", id="multipart"),
    ],
)
def test_a_write_answers_its_own_etag_when_a_second_client_races_it(
    s3_ufs: Ufs, s3_raw: s3fs.S3FileSystem, s3_root: str, what: str, body: bytes
) -> None:
    def race(key: str) -> None:
        if what == "deleted":
            s3_raw.rm_file(key)
        else:
            s3_raw.pipe_file(key, b"someone else's")

    ufs = Ufs(s3_ufs.options, backends={"s3": _RacedS3(s3_ufs.options, race)})
    uri = f"{s3_root}/raced"
    chunks: Iterator[bytes] = (body[i : i + (1 << 20)] for i in range(0, len(body), 1 << 20))
    status = ufs.write(uri, chunks)
    if len(body) > PART_SIZE:  # S3's ETag of a multipart upload: md5 of the parts' md5s
        parts = [body[i : i + PART_SIZE] for i in range(0, len(body), PART_SIZE)]
        digests = b"".join(hashlib.md5(part).digest() for part in parts)
        etag = f"{hashlib.md5(digests).hexdigest()}-{len(parts)}"
    else:
        etag = hashlib.md5(body).hexdigest()
    assert (status.uri, status.size, status.version, status.content_hash) == (
        uri, len(body), etag, etag
    )  # fmt: skip
    assert status.mtime_ns > 0
    if what == "deleted":
        with pytest.raises(UfsNotFound):
            s3_ufs.status(uri)
    else:
        assert s3_ufs.status(uri).version == hashlib.md5(b"someone else's").hexdigest()


def test_a_write_answers_the_status_a_head_gives_after_it(s3_ufs: Ufs, s3_root: str) -> None:
    for body in (b"small", iter([b"x" * PART_SIZE, b"tail"])):
        written = s3_ufs.write(f"{s3_root}/w", body)
        assert s3_ufs.status(f"{s3_root}/w") == written


def test_a_directory_emptied_by_deletes_lists_as_empty(s3_ufs: Ufs, s3_root: str) -> None:
    # SeaweedFS keeps an emptied directory and lists it as one 0-byte "sub/" object: that
    # marker is the directory itself, not a file named like it.
    s3_ufs.write(f"{s3_root}/emptied/sub/y", b"2")
    s3_ufs.delete(f"{s3_root}/emptied/sub/y")
    assert s3_ufs.list(f"{s3_root}/emptied/sub") == []
    assert s3_ufs.status(f"{s3_root}/emptied/sub").is_dir
    assert [s.is_dir for s in s3_ufs.list(f"{s3_root}/emptied")] == [True]
