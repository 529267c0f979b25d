"""A request's deadline against a real S3 (SeaweedFS): when it stops answering (SIGSTOP)
every operation a request uses gives up at the request's deadline, not the call's own; an
upload the request's deadline cut is still aborted, leaving no part behind."""

import os
import time
from collections.abc import Callable, Iterator

import pytest
import s3fs

from tests.integration.conftest import frozen
from ufs.adapter import Ufs, UfsOptions
from ufs.deadline import Deadline
from ufs.errors import UfsDeadlineExceeded
from ufs.kinds.s3 import S3Options
from ufs.s3 import PART_SIZE
from worker.devlab.local.s3 import ACCESS_KEY, SECRET_KEY, LocalS3

pytestmark = pytest.mark.integration


class FakeClock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


def test_every_operation_gives_up_at_the_request_deadline(private_s3: LocalS3) -> None:
    # The default call deadline (10 s), far past the requests' own.
    endpoint, key, secret = private_s3.endpoint, ACCESS_KEY, SECRET_KEY
    s3 = S3Options(endpoint=endpoint, access_key_id=key, secret_access_key=secret)
    ufs = Ufs(UfsOptions(kinds=(s3,)))
    written = ufs.write("s3://private/d/a", b"hello")
    calls: dict[str, Callable[[Deadline], object]] = {
        "status": lambda d: ufs.status("s3://private/d/a", deadline=d),
        "list": lambda d: ufs.list("s3://private/d", deadline=d),
        "pinned read": lambda d: ufs.read("s3://private/d/a", 0, 5, written.version, deadline=d),
        "batch read": lambda d: ufs.read_files([written], deadline=d)[0],
        "write": lambda d: ufs.write("s3://private/d/b", b"bytes", deadline=d),
        "streamed write": lambda d: ufs.write("s3://private/d/c", iter([b"x"]), deadline=d),
        "append": lambda d: ufs.append("s3://private/d/a", iter([b"+"]), deadline=d),
        "delete": lambda d: ufs.delete("s3://private/d/a", deadline=d),
        "rename": lambda d: ufs.rename("s3://private/d/a", "s3://private/d/z", deadline=d),
    }
    with frozen(private_s3):
        for what, call in calls.items():
            outcome = None
            try:
                outcome = call(Deadline(0.3))
            except UfsDeadlineExceeded as exc:
                outcome = exc
            assert isinstance(outcome, UfsDeadlineExceeded), what  # a batch read: its outcome
            assert "the request's deadline of 0.3s" in str(outcome), what
    assert ufs.read("s3://private/d/a", 0, 5, written.version) == b"hello"  # untouched


def test_an_upload_the_request_deadline_cut_is_aborted_all_the_same(
    s3_ufs: Ufs, s3_root: str, s3_raw: s3fs.S3FileSystem
) -> None:
    """The abort of a cut upload runs by the call's own deadline, not the request's: here the
    request had no time at all (``X-Dora-Timeout-Ms: 0``), on a clock the test moves so that
    the first part still goes (the upload exists) and the last one finds the time spent."""
    clock = FakeClock()
    deadline = Deadline(0.0, clock)
    clock.now = -60.0

    def body() -> Iterator[bytes]:
        yield os.urandom(PART_SIZE)  # sent as the first part before the next chunk is asked for
        clock.now = 0.0
        yield b"tail"

    uri = f"{s3_root}/cut"
    with pytest.raises(UfsDeadlineExceeded, match="the request's deadline of 0s"):
        s3_ufs.write(uri, body(), deadline=deadline)
    bucket, _, key = uri.removeprefix("s3://").partition("/")
    give_up = time.monotonic() + 30
    while s3_raw.call_s3("list_multipart_uploads", Bucket=bucket, Prefix=key).get("Uploads"):
        assert time.monotonic() < give_up, "the cut upload was never aborted"
        time.sleep(0.1)
    assert not s3_raw.exists(f"{bucket}/{key}")
