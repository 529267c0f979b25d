"""What SeaweedFS filer events mean for S3 objects (worker.feeds.seaweedfs_events), on events
shaped as a real filer sends them (captured from ``weed mini`` 4.48 behind its S3 gateway)."""

import base64
import hashlib

from worker.feeds.change import Change
from worker.feeds.filer_pb.seaweedfs_filer_pb2 import (
    Entry,
    EventNotification,
    FileChunk,
    FuseAttributes,
    SubscribeMetadataResponse,
)
from worker.feeds.seaweedfs_events import changes, etag

BUCKETS = "/buckets"


def file_entry(name: str, data: bytes) -> Entry:
    md5 = hashlib.md5(data).digest()
    return Entry(
        name=name,
        chunks=[FileChunk(e_tag=base64.b64encode(md5).decode(), size=len(data))],
        attributes=FuseAttributes(file_size=len(data), md5=md5),
        extended={"Seaweed-X-Amz-ETag": md5.hex().encode()},
    )


def event(
    directory: str, old: Entry | None = None, new: Entry | None = None, new_parent: str = ""
) -> SubscribeMetadataResponse:
    notification = EventNotification(old_entry=old, new_entry=new, new_parent_path=new_parent)
    return SubscribeMetadataResponse(directory=directory, event_notification=notification)


def test_put_overwrite_delete_of_a_key_with_spaces_and_non_ascii() -> None:
    v1, v2 = file_entry("ü x.txt", b"hello"), file_entry("ü x.txt", b"hello2")
    uri = "s3://evt/a b/ü x.txt"
    put = event("/buckets/evt/a b", new=v1, new_parent="/buckets/evt/a b")
    assert changes(put, BUCKETS, BUCKETS) == [Change(uri, hashlib.md5(b"hello").hexdigest())]
    over = event("/buckets/evt/a b", old=v1, new=v2, new_parent="/buckets/evt/a b")
    assert changes(over, BUCKETS, BUCKETS) == [Change(uri, hashlib.md5(b"hello2").hexdigest())]
    delete = event("/buckets/evt/a b", old=v2)
    assert changes(delete, BUCKETS, BUCKETS) == [Change(uri, deleted=True)]


def test_a_rename_deletes_the_old_name_and_creates_the_new_one() -> None:
    moved = file_entry("b", b"x")
    renamed = event(
        "/buckets/evt/d1", old=file_entry("a", b"x"), new=moved, new_parent="/buckets/evt/d2"
    )
    assert changes(renamed, BUCKETS, BUCKETS) == [
        Change("s3://evt/d1/a", deleted=True),
        Change("s3://evt/d2/b", etag(moved)),
    ]


def test_multipart_uploads_in_progress_are_not_objects() -> None:
    part = file_entry("0001_x.part", b"part")
    assert changes(event("/buckets/evt/.uploads/u1", new=part), BUCKETS, BUCKETS) == []
    upload_dir = Entry(name="u1", is_directory=True)
    assert changes(event("/buckets/evt/.uploads", old=upload_dir), BUCKETS, BUCKETS) == []


def test_a_completed_multipart_upload_names_its_stored_etag() -> None:
    entry = Entry(
        name="mp",
        chunks=[
            FileChunk(e_tag="vbzwLuCql3eVp50l/P3MsQ=="),
            FileChunk(e_tag="ghNrQkDWzk6n0D5RRpo5Ow=="),
        ],
        extended={"Seaweed-X-Amz-ETag": b'"8b0be7847da5564ae08e97af63b60885-2"'},
    )
    assert changes(event("/buckets/evt", new=entry), BUCKETS, BUCKETS) == [
        Change("s3://evt/mp", "8b0be7847da5564ae08e97af63b60885-2")
    ]


def test_without_a_stored_etag_it_is_computed_as_seaweedfs_does() -> None:
    parts = [hashlib.md5(b"a").digest(), hashlib.md5(b"b").digest()]
    entry = Entry(name="k", chunks=[FileChunk(e_tag=base64.b64encode(d).decode()) for d in parts])
    assert etag(entry) == hashlib.md5(b"".join(parts)).hexdigest() + "-2"
    assert etag(Entry(name="k", chunks=[FileChunk(e_tag="not an md5")])) == ""


def test_versions_fold_into_their_key_with_no_version_named() -> None:
    version = file_entry("v_0001", b"x")
    folded = event("/buckets/ver/dir/key.versions", new=version)
    assert changes(folded, BUCKETS, BUCKETS) == [Change("s3://ver/dir/key")]


def test_the_prefix_matches_whole_segments() -> None:
    other_bucket = event("/buckets/evt-ver", new=file_entry("z", b"z"))
    assert changes(other_bucket, BUCKETS, "/buckets/evt") == []
    own_bucket = event("/buckets/evt", new=file_entry("z", b"z"))
    assert [c.uri for c in changes(own_bucket, BUCKETS, "/buckets/evt")] == ["s3://evt/z"]
    outside = event("/etc", new=file_entry("passwd", b"x"))
    assert changes(outside, BUCKETS, "/") == []


def test_directories_and_buckets_removed_take_everything_under_them() -> None:
    directory = Entry(name="d", is_directory=True)
    assert changes(event("/buckets/evt", new=directory), BUCKETS, BUCKETS) == []
    assert changes(event("/buckets/evt", old=directory), BUCKETS, BUCKETS) == [
        Change("s3://evt/d", deleted=True, prefix=True)
    ]
    bucket = Entry(name="evt", is_directory=True)
    assert changes(event("/buckets", old=bucket), BUCKETS, BUCKETS) == [
        Change("s3://evt", deleted=True, prefix=True)
    ]


def test_each_change_carries_the_event_s_time() -> None:
    put = event("/buckets/evt", new=file_entry("k", b"x"), new_parent="/buckets/evt")
    put.ts_ns = 1_714_564_800_123_456_789
    assert [c.at_ms for c in changes(put, BUCKETS, BUCKETS)] == [1_714_564_800_123]
