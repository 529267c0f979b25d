"""Alluxio's names and sizes for our statuses."""

import pytest

from ufs.errors import UfsInvalidPath
from worker.api.alluxio_shapes import human_size, namespace_path, uri_of


@pytest.mark.parametrize(
    ("size", "text"),
    [(0, "0B"), (1023, "1023B"), (1024, "1.00KB"), (77542, "75.72KB"), (5 << 20, "5.00MB"),
     (3 << 40, "3.00TB"), (2048 << 50, "2048.00PB")],
)  # fmt: skip
def test_human_size_as_alluxio_formats_it(size: int, text: str) -> None:
    assert human_size(size) == text


@pytest.mark.parametrize(
    ("uri", "path"),
    [("s3://bucket/a/b.csv", "/s3/bucket/a/b.csv"), ("s3://bucket", "/s3/bucket"),
     ("file:///data/x.bin", "/file/data/x.bin"), ("gs://b/k", "/gs/b/k")],
)  # fmt: skip
def test_namespace_paths_map_back_to_their_uri(uri: str, path: str) -> None:
    assert namespace_path(uri) == path
    assert uri_of(path) == uri


@pytest.mark.parametrize("path", ["/", "/s3", "/file/"])
def test_a_namespace_path_without_a_scheme_and_path_is_refused(path: str) -> None:
    with pytest.raises(UfsInvalidPath):
        uri_of(path)
