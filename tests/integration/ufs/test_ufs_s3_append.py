"""Appending to an object on a real S3 server (SeaweedFS), which has no append: a rewrite pinned
to the version seen (If-Match), so a change made meanwhile is never undone, and bounded by
``dora.ufs.append.rewrite.max.size``, past which the object is left as it was."""

import dataclasses

import pytest
import s3fs

from ufs.adapter import Ufs
from ufs.deadline import Deadline
from ufs.errors import UfsTooLarge, UfsVersionChanged

pytestmark = pytest.mark.integration


def test_an_object_changed_since_its_status_is_not_overwritten(
    s3_ufs: Ufs, s3_root: str, s3_raw: s3fs.S3FileSystem
) -> None:
    uri = f"{s3_root}/log.txt"
    seen = s3_ufs.write(uri, b"one")
    s3_raw.pipe_file(uri.removeprefix("s3://"), b"three")  # keeps the size, changes the ETag
    backend = s3_ufs._of(uri)
    with pytest.raises(UfsVersionChanged):
        backend.append(seen, iter([b"+"]), Deadline(10))
    assert s3_raw.cat_file(uri.removeprefix("s3://")) == b"three"


def test_an_append_past_the_bound_is_refused_and_changes_nothing(
    s3_ufs: Ufs, s3_root: str, s3_raw: s3fs.S3FileSystem
) -> None:
    bounded = Ufs(dataclasses.replace(s3_ufs.options, append_rewrite_max_bytes=10))
    uri = f"{s3_root}/small.txt"
    before = bounded.write(uri, b"123456")
    assert bounded.append(uri, iter([b"7890"])).size == 10
    with pytest.raises(UfsTooLarge, match="dora.ufs.append.rewrite.max.size"):
        bounded.append(uri, iter([b"1"]))
    assert s3_raw.cat_file(uri.removeprefix("s3://")) == b"1234567890"
    assert bounded.status(uri).version != before.version
