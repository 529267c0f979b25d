"""The ``dora`` filesystem with the same-host fast path on, against a real worker in process:
the same answers as without it, reads from page files once cached, and a write through the
filesystem seen at once by its next ``info``."""

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from pagestore.pagefile import header_size
from tests.worker.client.conftest import dora_fs, write_outside
from tests.worker.conftest import page_files
from worker.client import fastpath
from worker.client.fastpath import NearCacheMetadata, ShortCircuitRanges
from worker.client.filesystem import DoraFileSystem
from worker.service import WorkerService

PAGE = 64 * 1024


def served(service: WorkerService) -> dict[str, int]:
    """The worker's metadata counters that every status or listing it serves moves (not the
    metastore's, which its background flusher moves at any time)."""
    return {k: v for k, v in service.meta.counters().items() if not k.startswith("metastore_")}


def reader_stats(fs: DoraFileSystem) -> dict[str, int]:
    """The counts of the filesystem's short-circuit reader (which must be there)."""
    ranges = fs.reader.ranges
    assert isinstance(ranges, ShortCircuitRanges)
    facts = ranges.local.found
    assert facts is not None and facts.reader is not None
    return facts.reader.stats()


def test_reads_info_and_ls_with_the_fast_path(
    make_fs: Callable[..., DoraFileSystem], service: WorkerService, data_dir: Path
) -> None:
    content = os.urandom(3 * PAGE + 7)
    (data_dir / "f.bin").write_bytes(content)
    uri = f"file://{data_dir}/f.bin"
    fs = make_fs(short_circuit=True, near_cache=True)
    ranges, metadata = fs.reader.ranges, fs.reader.metadata
    assert isinstance(ranges, ShortCircuitRanges) and isinstance(metadata, NearCacheMetadata)
    assert fs.cat_file(uri) == content  # cold: over HTTP, and the worker keeps the pages
    assert fs.cat_file(uri, PAGE - 5, 2 * PAGE + 9) == content[PAGE - 5 : 2 * PAGE + 9]
    facts = ranges.local._found
    assert facts is not None and facts.reader is not None and facts.near is not None
    assert facts.reader.stats()["short_circuit_bytes"] == PAGE + 14
    with fs.open(uri, "rb") as f:
        f.seek(2 * PAGE)
        assert f.read(PAGE + 7) == content[2 * PAGE :]
    assert fs.info(uri)["size"] == len(content)
    names = [e["name"] for e in fs.ls(f"file://{data_dir}")]
    assert names == [uri]
    assert fs.ls(f"file://{data_dir}") == fs.ls(f"file://{data_dir}")
    fs.pipe_file(uri, b"new")
    assert fs.info(uri)["size"] == 3
    assert fs.cat_file(uri) == b"new"


def test_a_read_of_several_chunks_fills_one_buffer_from_pages_and_http(
    make_fs: Callable[..., DoraFileSystem], data_dir: Path
) -> None:
    content = os.urandom(5 * PAGE + 3)
    (data_dir / "g.bin").write_bytes(content)
    uri = f"file://{data_dir}/g.bin"
    fs = make_fs("dora.user.client.read.chunk.size=100KB", short_circuit=True)
    assert fs.cat_file(uri, PAGE, 2 * PAGE) == content[PAGE : 2 * PAGE]  # the worker keeps it
    assert fs.cat_file(uri, 3 * PAGE + 1, 4 * PAGE) == content[3 * PAGE + 1 : 4 * PAGE]
    before = reader_stats(fs)["short_circuit_bytes"]
    # Chunks of 100 KB across cached and missing pages, the gaps read over HTTP in pieces.
    assert fs.cat_file(uri) == content
    assert reader_stats(fs)["short_circuit_bytes"] >= before + 2 * PAGE
    with fs.open(uri, "rb", cache_type="none") as f:
        f.seek(PAGE - 9)
        assert f.read(3 * PAGE) == content[PAGE - 9 : 4 * PAGE - 9]
    assert fs.cat_file(uri) == content  # now all of it from page files


def test_the_fast_path_is_on_by_default_and_a_property_or_argument_turns_it_off(
    make_fs: Callable[..., DoraFileSystem],
) -> None:
    fs = make_fs()
    assert isinstance(fs.reader.ranges, ShortCircuitRanges)
    assert isinstance(fs.reader.metadata, NearCacheMetadata)
    off = make_fs(
        "dora.user.client.short.circuit.enabled=false", "dora.user.client.near.cache.enabled=false"
    )
    assert not isinstance(off.reader.ranges, ShortCircuitRanges)
    assert not isinstance(off.reader.metadata, NearCacheMetadata)
    on = make_fs("dora.user.client.short.circuit.enabled=false", short_circuit="true")
    assert isinstance(on.reader.ranges, ShortCircuitRanges)
    assert not isinstance(make_fs(near_cache=False).reader.metadata, NearCacheMetadata)
    with pytest.raises(ValueError, match="short_circuit='maybe'"):
        make_fs(short_circuit="maybe")


def test_a_positive_sync_interval_is_served_from_the_near_cache_within_its_age(
    make_fs: Callable[..., DoraFileSystem], service: WorkerService, data_dir: Path
) -> None:
    (data_dir / "f").write_bytes(b"x")
    uri = f"file://{data_dir}/f"
    fs = make_fs(near_cache=True)
    assert fs.info(uri, sync_interval="1h")["size"] == 1
    assert fs.ls(f"file://{data_dir}", sync_interval="1h")[0]["size"] == 1
    calls = served(service)
    (data_dir / "f").write_bytes(b"yy")  # outside the worker: an interval of 1 h allows the old
    assert fs.info(uri, sync_interval="1h")["size"] == 1
    assert "age_ms" not in fs.info(uri, sync_interval="1h")
    assert fs.ls(f"file://{data_dir}", sync_interval="1h")[0]["size"] == 1
    assert served(service) == calls
    assert fs.info(uri, sync_interval="0")["size"] == 2


def test_the_near_cache_keeps_what_a_path_rule_asks_to_re_check_no_longer_than_it_allows(
    make_service: Callable[..., WorkerService], data_dir: Path
) -> None:
    """Issue 22 item 6: a call without sync_interval got the worker's default from the
    near-cache, not the path's rule."""
    hot, cold = data_dir / "hot", data_dir / "cold"
    for directory in (hot, cold):
        write_outside(directory / "named" / "f", b"x")
    rules = (
        f"dora.worker.path.conf=file://{hot} dora.user.file.metadata.sync.interval=0, "
        f"file://{cold}/named dora.user.file.metadata.sync.interval=0"
    )
    service = make_service(rules)
    fs = dora_fs(service, near_cache=True)
    for directory in (hot, cold):
        uri = f"file://{directory}/named/f"
        assert fs.info(uri)["size"] == 1
        assert fs.ls(f"file://{directory}")[0]["name"] == f"file://{directory}/named"
        assert fs.ls(f"file://{directory}/named")[0]["size"] == 1
        write_outside(directory / "named" / "f", b"yy")
        write_outside(directory / "other", b"z")
        assert fs.info(uri)["size"] == 2  # a rule covers both
        assert fs.ls(f"file://{directory}/named")[0]["size"] == 2
        assert fs.info(uri, sync_interval="-1")["size"] == 2  # the call's option still wins
    assert [e["name"] for e in fs.ls(f"file://{hot}")][-1] == f"file://{hot}/other"
    # A rule names a child of cold: the near-cache keeps neither that child's status from
    # cold's listing nor the listing (the worker answers both, from its own cache).
    for ask in (lambda: fs.ls(f"file://{cold}"), lambda: fs.info(f"file://{cold}/named")):
        calls = served(service)
        ask()
        assert served(service) != calls
    # Written outside after cold was listed: at the default interval the listing still
    # answers that it is not there (as s3fs's listings cache does), so it is asked for afresh.
    fs.info(f"file://{cold}/other", sync_interval="0")
    calls = served(service)
    fs.info(f"file://{cold}/other")  # no rule: the near-cache answers
    assert served(service) == calls


def test_a_small_read_of_located_pages_needs_no_call_and_an_evicted_page_goes_over_http(
    make_fs: Callable[..., DoraFileSystem],
    data_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    content = os.urandom(4 * PAGE)
    (data_dir / "h.bin").write_bytes(content)
    uri = f"file://{data_dir}/h.bin"
    fs = make_fs(short_circuit=True)
    assert fs.cat_file(uri) == content  # the worker keeps the pages
    with fs.open(uri, "rb", cache_type="none") as f:
        f.seek(3)
        assert f.read(100) == content[3:103]  # locates the window
        runs: list[object] = []
        run = fs.client.sync.run
        monkeypatch.setattr(fs.client.sync, "run", lambda flow: runs.append(flow) or run(flow))
        f.seek(PAGE - 50)
        assert f.read(PAGE) == content[PAGE - 50 : 2 * PAGE - 50]
        assert runs == []  # read in this thread, no flow, no call
        for path in page_files(tmp_path / "work", uri):
            path.unlink()  # as eviction does, after the reader located the pages
        f.seek(2 * PAGE + 1)
        assert f.read(PAGE - 1) == content[2 * PAGE + 1 : 3 * PAGE]
        assert runs  # the page found missing: a flow reads it over HTTP
    stats = reader_stats(fs)
    # Each byte counted once, as short-circuit or as HTTP.
    assert stats["short_circuit_bytes"] == 100 + PAGE
    assert stats["http_bytes"] == len(content) + PAGE - 1  # the cold read, then the evicted page
    # The read misses, locates again (the worker, not told of the unlinking, still names the
    # file), misses again and reads over HTTP.
    assert stats["miss_vanished"] == 2


def test_the_sizes_kept_for_pinned_reads_are_bounded(
    make_fs: Callable[..., DoraFileSystem], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fastpath, "MAX_SIZES", 2)
    ranges = make_fs(short_circuit=True).reader.ranges
    assert isinstance(ranges, ShortCircuitRanges)
    local = ranges.local
    local.keep_size("file:///a", "v1", 1)
    local.keep_size("file:///b", "v1", 2)
    assert local.size_of("file:///a", "v1") == 1  # used: now the most recent
    local.keep_size("file:///c", "v1", 3)
    assert local.size_of("file:///b", "v1") is None
    assert (local.size_of("file:///a", "v1"), local.size_of("file:///c", "v1")) == (1, 3)


def test_a_read_in_parallel_chunks_locates_each_window_once(
    make_fs: Callable[..., DoraFileSystem], data_dir: Path
) -> None:
    content = os.urandom(8 * PAGE)
    (data_dir / "w.bin").write_bytes(content)
    uri = f"file://{data_dir}/w.bin"
    assert make_fs().cat_file(uri) == content  # the worker keeps the pages
    fs = make_fs("dora.user.client.read.chunk.size=64KB", short_circuit=True)
    assert fs.cat_file(uri) == content  # eight chunks, all in one window
    stats = reader_stats(fs)
    assert (stats["locates"], stats["short_circuit_bytes"]) == (1, len(content))


@pytest.mark.parametrize("harm", ["corrupt", "wrong_page"])
def test_a_small_read_of_a_harmed_page_file_reads_right_bytes_over_http(
    make_fs: Callable[..., DoraFileSystem], data_dir: Path, tmp_path: Path, harm: str
) -> None:
    content = os.urandom(3 * PAGE)
    (data_dir / "k.bin").write_bytes(content)
    uri = f"file://{data_dir}/k.bin"
    fs = make_fs(short_circuit=True)
    assert fs.cat_file(uri) == content  # the worker keeps the pages
    with fs.open(uri, "rb", cache_type="none") as f:
        assert f.read(10) == content[:10]  # locates the window
        files = sorted(page_files(tmp_path / "work", uri), key=lambda p: p.name)
        if harm == "corrupt":
            with files[1].open("r+b") as page:
                page.seek(header_size(PAGE) + 500)  # within the range read
                flipped = page.read(1)[0] ^ 0xFF
                page.seek(-1, os.SEEK_CUR)
                page.write(bytes([flipped]))
        else:
            files[1].write_bytes(files[2].read_bytes())  # another page's file under its name
        f.seek(PAGE + 5)
        assert f.read(1000) == content[PAGE + 5 : PAGE + 1005]
    assert reader_stats(fs)[f"miss_{harm}"] >= 1
