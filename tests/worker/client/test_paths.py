"""Naming files: full UFS URIs inside the filesystem, ``dora://`` and ``dora::`` prefixes, and
fsspec's URL chaining (``dora::s3://bucket/key``)."""

import fsspec
import httpx
import pytest

from tests.worker.client.conftest import client_config
from worker.client import DoraFileSystem
from worker.client.errors import InvalidRequest
from worker.client.paths import class_strip, strip_dora, to_uri


def offline_fs(**options: object) -> DoraFileSystem:
    """A filesystem whose worker answers nothing (names only are exercised)."""
    transport = httpx.MockTransport(lambda request: httpx.Response(500))
    return DoraFileSystem(
        transport=transport, config=client_config(), skip_instance_cache=True, **options
    )


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("s3://b/k", "s3://b/k"),
        ("dora://s3://b/k", "s3://b/k"),
        ("dora::s3://b/k", "s3://b/k"),
        ("dora::file:///data/x", "file:///data/x"),
        ("s3://b/dir/", "s3://b/dir"),
        ("S3://b/k", "s3://b/k"),
        ("/data/x", "file:///data/x"),
    ],
)
def test_paths_become_full_uris(given: str, expected: str) -> None:
    fs = offline_fs()
    assert fs._strip_protocol(given) == expected
    assert DoraFileSystem._strip_protocol(given) == (expected if "://" in given else "/data/x")


def test_class_level_strip_keeps_the_empty_path_of_a_chained_url() -> None:
    assert class_strip("dora://") == ""
    assert class_strip("dora::") == ""
    assert class_strip(["dora://s3://b/k", "s3://b/j/"]) == ["s3://b/k", "s3://b/j"]
    assert strip_dora("dora::dora://s3://b/k") == "s3://b/k"


def test_scheme_less_paths_take_the_target_protocol() -> None:
    assert to_uri("bucket/key", "s3") == "s3://bucket/key"
    assert to_uri("/data/x", "file") == "file:///data/x"
    fs = offline_fs(target_protocol="s3")
    assert fs._uri("bucket/key") == "s3://bucket/key"
    assert fs.worker_for("bucket/key") == fs.worker_for("s3://bucket/key")


def test_a_chained_instance_shows_names_in_the_inner_form() -> None:
    """As fsspec's chained filesystems do: pyarrow needs names found under a directory to
    start with the directory's path as it gave it (``bucket/dir``)."""
    fs = offline_fs(target_protocol="s3")
    assert fs._strip_protocol("bucket/key/") == "bucket/key"
    assert fs._strip_protocol(["bucket/a", "s3://bucket/b"]) == ["bucket/a", "bucket/b"]
    assert fs._strip_protocol("gs://other/x") == "gs://other/x"
    assert fs.unstrip_protocol("bucket/key") == "dora://s3://bucket/key"
    local = offline_fs(target_protocol="file")
    assert local._strip_protocol("file:///data/x") == "/data/x"
    assert local.unstrip_protocol("/data/x") == "dora://file:///data/x"


@pytest.mark.parametrize("bad", ["relative/path", "s3://b/../k", "s3://"])
def test_bad_paths_are_refused(bad: str) -> None:
    with pytest.raises(InvalidRequest) as info:
        offline_fs()._strip_protocol(bad)
    assert isinstance(info.value, ValueError)


def test_unstrip_gives_a_url_that_reopens_through_dora() -> None:
    """In the ``dora://`` form: DuckDB only routes names of that form to the filesystem."""
    fs = offline_fs()
    assert fs.unstrip_protocol("s3://b/k") == "dora://s3://b/k"
    assert fs.unstrip_protocol("dora::s3://b/k") == "dora://s3://b/k"
    again, path = fsspec.core.url_to_fs(fs.unstrip_protocol("s3://b/k"), config=client_config())
    assert isinstance(again, DoraFileSystem)
    assert again._uri(path) == "s3://b/k"


def test_parent_of_full_uris() -> None:
    assert DoraFileSystem._parent("s3://b/dir/k") == "s3://b/dir"
    assert DoraFileSystem._parent("file:///data/x") == "file:///data"
    assert DoraFileSystem._parent("s3://b") == "s3://b"


def test_the_entry_point_registers_the_protocol() -> None:
    assert fsspec.get_filesystem_class("dora") is DoraFileSystem


@pytest.mark.parametrize(
    ("url", "protocol", "path", "uri"),
    [
        ("dora::s3://bucket/key", "s3", "bucket/key", "s3://bucket/key"),
        ("dora::file:///data/x", "file", "/data/x", "file:///data/x"),
    ],
)
def test_chained_urls_build_a_dora_fs_that_completes_the_path(
    url: str, protocol: str, path: str, uri: str
) -> None:
    config = client_config()
    fs, found = fsspec.core.url_to_fs(url, config=config, skip_instance_cache=True)
    assert isinstance(fs, DoraFileSystem)
    assert fs.target_protocol == protocol
    assert found == path
    assert fs._uri(found) == uri
    assert fs._strip_protocol(found) == path


def test_one_instance_serves_every_chained_file() -> None:
    config = client_config()
    first, _ = fsspec.core.url_to_fs("dora::s3://bucket/a", config=config)
    second, _ = fsspec.core.url_to_fs("dora::s3://bucket/b", config=config)
    assert first is second


def test_options_for_the_inner_filesystem_are_refused() -> None:
    with pytest.raises(ValueError, match=r"dora\.ufs"):
        fsspec.core.url_to_fs("dora::s3://bucket/key", config=client_config(), s3={"anon": True})


def test_unknown_options_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown storage option 'use_listings_cache'"):
        DoraFileSystem(config=client_config(), use_listings_cache=False, skip_instance_cache=True)


def test_an_instance_pickles_for_spark_executors() -> None:
    import pickle

    fs = DoraFileSystem(
        workers=["h1:1", "h2:2"],
        sync_interval="30s",
        virtual_nodes=5,
        config=client_config(),
        read_chunk_size="1MB",
    )
    copy = pickle.loads(pickle.dumps(fs))
    assert isinstance(copy, DoraFileSystem)
    assert copy.options.read_chunk_size == 1 << 20  # a storage option travels too
    assert copy.options == fs.options
