"""WebHDFS paths ↔ URIs, and the virtual directories above the mount roots."""

import pytest

from ufs.roots import MountRoots
from worker.api.webhdfs_paths import Namespace, path_of, uri_of


@pytest.mark.parametrize(
    ("path", "uri"),
    [
        ("/s3/bucket/key/x.parquet", "s3://bucket/key/x.parquet"),
        ("/file/data/x", "file:///data/x"),
        ("/file", "file:///"),
        ("/gs/b", "gs://b"),
    ],
)
def test_paths_and_uris_map_both_ways(path: str, uri: str) -> None:
    assert uri_of(path) == uri
    assert path_of(uri) == path


def test_only_the_way_to_the_roots_is_virtual() -> None:
    space = Namespace(MountRoots(["s3://lake/tables", "file:///srv/data"]))
    assert space.children("/") == ["file", "s3"]
    assert space.children("/s3") == ["lake"]
    assert space.children("/s3/lake") == ["tables"]
    assert space.is_virtual("/file/srv")
    # A root and what lies under it are real paths; so is anything off the way to a root.
    assert not space.is_virtual("/s3/lake/tables")
    assert not space.is_virtual("/s3/lake/tables/t1")
    assert not space.is_virtual("/s3/other")
    assert space.home() == "/s3/lake/tables"


def test_no_roots_means_no_virtual_directories() -> None:
    space = Namespace(MountRoots([]))
    assert space.children("/") == []
    assert space.home() == "/"
