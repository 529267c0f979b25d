"""Short-circuit reads against a real worker (service, page store and REST app in process):
right bytes from page files when cached, over HTTP otherwise, and never wrong bytes whatever
happens to a page file meanwhile."""

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from pagestore.page import PageId
from pagestore.shortcircuit import PageFile, PageLocations
from tests.worker.conftest import Api, page_files
from tests.worker.meta.support import wait_until
from ufs.status import file_id
from worker.api.locate import answer
from worker.client.shortcircuit import ShortCircuitReader
from worker.service import WorkerService

PAGE = 64 * 1024


class Remote:
    """The reader's two calls over the worker's REST API; raises on an error answer."""

    def __init__(self, api: Api) -> None:
        self.api = api
        self.fetched: list[tuple[int, int]] = []

    def locate(self, path: str, version: str, offset: int, length: int) -> dict[str, Any]:
        answer = self.api.get(
            "/v1/locate",
            params={"path": path, "version": version, "offset": offset, "length": length},
        )
        answer.raise_for_status()
        data: dict[str, Any] = answer.json()
        return data

    def fetch(self, path: str, version: str, offset: int, buffer: memoryview) -> None:
        params = {"path": path, "version": version, "offset": offset, "length": len(buffer)}
        answer = self.api.get("/v1/read", params=params)
        answer.raise_for_status()
        self.fetched.append((offset, len(buffer)))
        buffer[:] = answer.content


@pytest.fixture
def content(data_dir: Path) -> bytes:
    data = os.urandom(5 * PAGE + 1000)
    (data_dir / "f.bin").write_bytes(data)
    return data


@pytest.fixture
def uri(data_dir: Path, content: bytes) -> str:
    return f"file://{data_dir}/f.bin"


@pytest.fixture
def remote(api: Api) -> Remote:
    return Remote(api)


@pytest.fixture
def reader(remote: Remote) -> Iterator[ShortCircuitReader]:
    yield ShortCircuitReader(PAGE, remote.locate, remote.fetch, window_pages=4)


@dataclass
class Case:
    """A file of five and a bit pages, the worker, and a reader over its REST API."""

    service: WorkerService
    reader: ShortCircuitReader
    remote: Remote
    uri: str
    content: bytes
    work: Path

    def pages(self) -> list[Path]:
        """The file's page files, by page index."""
        found = page_files(self.work, self.uri)
        return sorted(found, key=lambda p: int(p.name.rsplit(".")[-1]))

    def read(self, version: str, offset: int, length: int) -> bytes:
        return read(self.reader, self.uri, version, offset, length)


@pytest.fixture
def case(
    service: WorkerService,
    reader: ShortCircuitReader,
    remote: Remote,
    uri: str,
    content: bytes,
    tmp_path: Path,
) -> Case:
    return Case(service, reader, remote, uri, content, tmp_path / "work")


def warm(service: WorkerService, uri: str) -> str:
    result = service.read(service.request(uri))
    b"".join(result.chunks)
    return result.status.version


def read(reader: ShortCircuitReader, uri: str, version: str, offset: int, length: int) -> bytes:
    buffer = bytearray(length)
    reader.read_into(uri, version, offset, buffer)
    return bytes(buffer)


def test_warm_reads_come_from_page_files(
    service: WorkerService, reader: ShortCircuitReader, remote: Remote, uri: str, content: bytes
) -> None:
    version = warm(service, uri)
    for offset, length in [(0, PAGE), (PAGE - 10, 20), (3 * PAGE + 5, 2 * PAGE + 995), (0, 1)]:
        assert read(reader, uri, version, offset, length) == content[offset : offset + length]
    assert remote.fetched == []
    stats = reader.stats()
    assert stats["locates"] == 2  # two windows of four pages, each located once
    assert stats["short_circuit_bytes"] == PAGE + 20 + 2 * PAGE + 995 + 1
    # The worker counts what it handed out, whole pages of both windows (it sees no reads).
    assert service.stats()["short_circuit_located_bytes"] == len(content)
    metric = f"dora_short_circuit_located_bytes_total {float(len(content))}"
    assert metric in service.metrics.render().decode()


def test_missing_pages_are_read_over_http_then_from_files(
    service: WorkerService, reader: ShortCircuitReader, remote: Remote, uri: str, content: bytes
) -> None:
    version = service.status(service.request(uri)).version
    assert read(reader, uri, version, 10, 100) == content[10:110]
    assert remote.fetched == [(10, 100)]  # not cached: over HTTP, and the worker keeps it
    assert read(reader, uri, version, 200, 100) == content[200:300]
    assert remote.fetched == [(10, 100)]  # located again: now from the file
    assert reader.stats()["short_circuit_bytes"] == 100


def test_an_evicted_page_is_a_miss_not_wrong_bytes(case: Case) -> None:
    version = warm(case.service, case.uri)
    assert case.read(version, 0, 10) == case.content[:10]
    for path in case.pages():
        path.unlink()  # as eviction does, after the reader located the pages
    assert case.read(version, PAGE, PAGE) == case.content[PAGE : 2 * PAGE]
    assert case.reader.stats()["miss_vanished"] == 1
    assert case.remote.fetched == [(PAGE, PAGE)]


def test_a_file_unlinked_while_open_is_still_read_whole(case: Case) -> None:
    version = warm(case.service, case.uri)
    located = PageLocations.from_dict(
        answer(case.service, case.service.locate(case.service.request(case.uri, version=version)))
    )
    with PageFile(located, located.pages[1]) as opened:
        for path in case.pages():
            path.unlink()  # as eviction does, under the open reader
        buffer = bytearray(PAGE)
        opened.read_into(0, buffer)
    assert bytes(buffer) == case.content[PAGE : 2 * PAGE]
    assert case.pages() == []


def test_a_replaced_page_file_is_caught(case: Case) -> None:
    version = warm(case.service, case.uri)
    assert case.read(version, 0, 10) == case.content[:10]
    files = case.pages()
    shutil.copyfile(files[2], files[1])  # another page's file, under page 1's name
    assert case.read(version, PAGE, 100) == case.content[PAGE : PAGE + 100]
    assert case.reader.stats()["miss_wrong_page"] == 1
    assert case.remote.fetched == [(PAGE, 100)]


@pytest.mark.parametrize("how", ["renamed over", "overwritten in place"])
def test_a_page_file_kept_open_and_then_replaced_is_caught(case: Case, how: str) -> None:
    version = warm(case.service, case.uri)
    assert case.read(version, PAGE, 10) == case.content[PAGE : PAGE + 10]  # kept open now
    files = case.pages()
    if how == "renamed over":
        temp = files[1].with_name("other")
        shutil.copyfile(files[2], temp)
        temp.replace(files[1])
    else:
        shutil.copyfile(files[2], files[1])
    assert case.read(version, PAGE, 100) == case.content[PAGE : PAGE + 100]
    stats = case.reader.stats()
    assert stats.get("miss_wrong_page", 0) + stats.get("miss_corrupt", 0) == 1
    assert case.remote.fetched == [(PAGE, 100)]


def test_a_corrupt_block_is_a_miss(case: Case) -> None:
    version = warm(case.service, case.uri)
    page_two = case.pages()[2]
    raw = bytearray(page_two.read_bytes())
    raw[-5] ^= 0xFF  # a byte of the data, past the header
    page_two.write_bytes(raw)
    assert case.read(version, 2 * PAGE, PAGE) == case.content[2 * PAGE : 3 * PAGE]
    assert case.reader.stats()["miss_corrupt"] == 1
    assert case.remote.fetched == [(2 * PAGE, PAGE)]


def test_a_version_gone_is_refused_not_served(case: Case, api: Api) -> None:
    version = warm(case.service, case.uri)
    assert case.read(version, 0, 10) == case.content[:10]
    written = api.request("PUT", "/v1/write", params={"path": case.uri}, content=b"new")
    written.raise_for_status()
    # The old version's page files are unlinked in the background; until then reading them is
    # reading that version's verified bytes, which a read pinned to it may do.
    wait_until(lambda: not page_files(case.work, case.uri, version))
    with pytest.raises(httpx.HTTPStatusError) as refused:
        case.read(version, 0, 10)  # old pages evicted, the HTTP read is pinned
    assert refused.value.response.status_code == 412


def test_a_page_file_this_process_may_not_open_sends_reads_over_http(case: Case) -> None:
    """In a child that dropped root for ``nobody``, with the page files readable by root only."""
    version = warm(case.service, case.uri)
    answer = case.remote.locate(case.uri, version, 0, 4 * PAGE)
    for path in case.pages():
        path.chmod(0o600)
    pid = os.fork()
    if pid == 0:  # the child: this module's reader and syscalls only, then _exit
        code = 99
        try:
            os.setgid(65534)
            os.setuid(65534)
            fetched: list[int] = []

            def fetch(path: str, v: str, offset: int, buffer: memoryview) -> None:
                fetched.append(offset)
                buffer[:] = case.content[offset : offset + len(buffer)]

            reader = ShortCircuitReader(PAGE, lambda *_: answer, fetch, window_pages=4)
            right = read(reader, case.uri, version, 0, 10) == case.content[:10]
            right &= read(reader, case.uri, version, PAGE, 10) == case.content[PAGE : PAGE + 10]
            # One denied open, then no more tries: both reads over HTTP.
            code = (
                0 if right and reader.stats().get("miss_denied") == 1 and len(fetched) == 2 else 1
            )
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def stored(service: WorkerService, uri: str, version: str, pages: tuple[int, ...]) -> bool:
    return all(service.pages.has_page(PageId(file_id(uri), version, i)) for i in pages)


def test_locate_answers_and_errors(service: WorkerService, api: Api, uri: str) -> None:
    version = warm(service, uri)
    service.invalidate(service.request(uri))
    # The invalidated pages' files are unlinked in the background, and until they are gone a
    # fill of those pages is refused (PageStore.put: never lost, not stored): warm until stored.
    wait_until(lambda: stored(service, uri, warm(service, uri), (1, 2)))
    version = warm(service, uri)
    found = api.get("/v1/locate", params={"path": uri, "offset": PAGE + 1, "length": PAGE})
    assert found.status_code == 200
    data = found.json()
    assert data["version"] == version and data["status"]["version"] == version
    assert [p[0] for p in data["pages"]] == [1, 2] and data["missing"] == []
    cases = [
        ({"path": uri, "version": "other"}, 412),
        ({"path": "file:///etc/passwd"}, 403),
        ({"path": uri, "offset": 10**9}, 416),
        ({"path": uri, "offset": "x"}, 400),
        ({"path": uri.rsplit("/", 1)[0]}, 400),
    ]
    for params, code in cases:
        assert api.get("/v1/locate", params=params).status_code == code, params
    local = api.get("/v1/local").json()
    assert local["page_size"] == PAGE and Path(local["generations"]).is_file()


def held_open(paths: list[Path]) -> set[str]:
    """Which of ``paths`` this process holds open (removed ones included)."""
    names = {str(p) for p in paths}
    held = set()
    for fd in Path("/proc/self/fd").iterdir():
        try:
            target = os.readlink(fd).removesuffix(" (deleted)")
        except OSError:
            continue
        if target in names:
            held.add(target)
    return held


def test_forgetting_a_file_closes_its_page_files_kept_open(case: Case) -> None:
    version = warm(case.service, case.uri)
    assert case.read(version, 0, len(case.content)) == case.content
    files = case.pages()
    assert held_open(files) == {str(p) for p in files}  # kept open for the next read
    for path in files:
        path.unlink()  # invalidated: the descriptors alone now hold the space
    case.reader.forget(case.uri)
    assert held_open(files) == set()
