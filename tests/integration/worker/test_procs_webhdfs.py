"""WebHDFS's hot reads answered by a front process (``dora.worker.processes=2``): the same
calls made to a worker of one process and to the front of a worker of two, over one data
directory, answer the same status, headers and bytes — before and after a change made through
the primary — and the front answers them itself (it passes none of the successful ones on).
Its answers are in the access log and carry the feed revision, as the primary's are."""

import os
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.integration.harness import wait_for
from tests.integration.worker.procs_support import MultiWorker, on_socket
from worker.devlab.local.etcd import LocalEtcd
from worker.procs.supervisor import METRICS_PATH

pytestmark = pytest.mark.integration
HOST = {"Host": "dora.test:28080"}  # the same Host to both workers: redirects name it
IGNORED = frozenset({"date", "server"})


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "data"
    (path / "d" / "sub").mkdir(parents=True)
    (path / "d" / "a.bin").write_bytes(os.urandom((3 << 20) + 123))
    (path / "d" / "b name.txt").write_bytes(b"hello webhdfs")
    return path


@pytest.fixture
def workers(tmp_path: Path, data: Path) -> Iterator[tuple[MultiWorker, MultiWorker]]:
    roots = f"dora.worker.ufs.roots=file://{data}"
    for name in ("one", "two"):
        (tmp_path / name).mkdir()
    one = MultiWorker(tmp_path / "one", 1, roots)
    try:
        two = MultiWorker(tmp_path / "two", 2, roots)
    except BaseException:
        one.stop()
        raise
    yield one, two
    two.stop()
    one.stop()


def shown(answer: httpx.Response) -> tuple[int, dict[str, str], bytes]:
    headers = {k: v for k, v in answer.headers.items() if k not in IGNORED}
    return answer.status_code, headers, answer.content


def passed_on(front: httpx.Client) -> float:
    text = front.get(METRICS_PATH).text
    found = re.search(r"^dora_front_passed_on_total (\S+)$", text, re.MULTILINE)
    assert found is not None, text
    return float(found.group(1))


def hot_calls(data: Path) -> list[tuple[str, dict[str, str]]]:
    """WebHDFS reads a front answers itself, for the files in ``data`` as they are now."""
    base = f"/webhdfs/v1/file{data}/d"
    size = (data / "d" / "a.bin").stat().st_size
    return [
        (f"{base}/a.bin", {"op": "GETFILESTATUS"}),
        (f"{base}/b name.txt", {"op": "getfilestatus", "sync_interval": "-1"}),
        (base, {"op": "GETFILESTATUS"}),
        (base, {"op": "LISTSTATUS"}),
        (f"{base}/a.bin", {"op": "LISTSTATUS"}),
        (f"{base}/a.bin", {"op": "OPEN"}),
        (f"{base}/a.bin", {"op": "OPEN", "offset": "1000", "noredirect": "true"}),
        (f"{base}/a.bin", {"op": "OPEN", "data": "true"}),
        (f"{base}/a.bin", {"op": "OPEN", "data": "true", "offset": "5", "length": "70000"}),
        (f"{base}/a.bin", {"OP": "open", "DATA": "true", "offset": str(size - 10), "length": "99"}),
        (f"{base}/b name.txt", {"op": "OPEN", "data": "true", "offset": "6"}),
    ]


def error_calls(data: Path, version: str) -> list[tuple[str, dict[str, str]]]:
    """WebHDFS calls a front passes on: errors, and what only the primary answers."""
    base = f"/webhdfs/v1/file{data}/d"
    size = (data / "d" / "a.bin").stat().st_size
    return [
        (f"{base}/nope", {"op": "GETFILESTATUS"}),
        (f"{base}/nope", {"op": "LISTSTATUS"}),
        (base, {"op": "OPEN"}),
        (f"{base}/a.bin", {"op": "OPEN", "data": "true", "offset": str(size + 1)}),
        (f"{base}/a.bin", {"op": "OPEN", "data": "true", "version": "not-this-one"}),
        (f"{base}/a.bin", {"op": "OPEN", "data": "true", "offset": "-1"}),
        (f"{base}/a.bin", {"op": "GETFILESTATUS", "sync_interval": "soon"}),
        (f"{base}/a.bin", {"op": "GETFILESTATUS", "serve_stale": "true"}),
        ("/webhdfs/v1/file", {"op": "LISTSTATUS"}),
        (base, {"op": "LISTSTATUS_BATCH"}),
        (f"{base}/a.bin", {"op": "GETFILECHECKSUM"}),
    ]


def test_a_front_answers_webhdfs_reads_as_one_process_does(
    workers: tuple[MultiWorker, MultiWorker], data: Path
) -> None:
    one, two = workers
    single = httpx.Client(base_url=one.http.base_url, headers=HOST, timeout=30)
    primary_socket, front_socket = two.sockets()
    front, primary = on_socket(front_socket), on_socket(primary_socket)
    front.headers.update(HOST)
    a_bin = f"file://{data}/d/a.bin"

    def compare(calls: list[tuple[str, dict[str, str]]], answered_here: bool) -> None:
        for path, query in calls:
            before = passed_on(front)
            expected = shown(single.get(path, params=query))
            assert shown(front.get(path, params=query)) == expected, (path, query)
            assert (passed_on(front) == before) is answered_here, (path, query)

    version = single.get("/v1/status", params={"path": a_bin}).json()["version"]
    pinned = [
        (f"/webhdfs/v1/file{data}/d/a.bin", {"op": "OPEN", "data": "true", "version": version})
    ]
    for _ in range(2):  # the front asks the primary for what it keeps, then answers from it
        compare(hot_calls(data) + pinned, answered_here=True)
    compare(error_calls(data, version), answered_here=False)
    # Changes through the primary: the front's kept statuses and listing are stale at once.
    new = b"x" * 4321
    written = primary.put("/v1/write", params={"path": a_bin}, content=new)
    assert written.status_code in (200, 201), written.text
    primary.put("/v1/write", params={"path": f"file://{data}/d/c.bin"}, content=b"c")
    for path in ("d/a.bin", "d"):  # what the one-process worker had kept of the old state
        single.post("/v1/invalidate", params={"path": f"file://{data}/{path}"})
    # The directory's own status (its mtime) is not a write's to change: dropped on both.
    primary.post("/v1/invalidate", params={"path": f"file://{data}/d"})
    compare(pinned, answered_here=False)  # that version is gone: the primary's answer
    compare(hot_calls(data), answered_here=True)
    assert front.get(pinned[0][0], params={"op": "OPEN", "data": "true"}).content == new
    # A change outside, then an invalidation through the primary.
    (data / "d" / "b name.txt").write_bytes(b"changed outside")
    primary.post("/v1/invalidate", params={"path": f"file://{data}/d/b name.txt"})
    single.post("/v1/invalidate", params={"path": f"file://{data}/d/b name.txt"})
    compare(hot_calls(data), answered_here=True)
    opened = front.get(f"/webhdfs/v1/file{data}/d/b name.txt", params={"op": "OPEN", "data": "1"})
    assert opened.content == b"changed outside"


def test_a_fronts_answers_are_logged_and_name_the_feed_revision(tmp_path: Path, data: Path) -> None:
    (tmp_path / "two").mkdir()
    etcd = LocalEtcd(tmp_path / "etcd").start()
    try:
        two = MultiWorker(tmp_path / "two", 2, f"dora.worker.ufs.roots=file://{data}",
                          f"dora.cluster.etcd.endpoints={etcd.endpoint}",
                          "dora.worker.http.access.log=true")  # fmt: skip
        try:
            check_log_and_revision(two, data)
        finally:
            two.stop()
    finally:
        etcd.stop()


def check_log_and_revision(two: MultiWorker, data: Path) -> None:
    primary_socket, front_socket = two.sockets()
    front, primary = on_socket(front_socket), on_socket(primary_socket)
    uri = f"file://{data}/d/a.bin"
    written = primary.put("/v1/write", params={"path": uri}, content=b"r" * 1000)
    revision = written.headers["X-Dora-Revision"]
    assert int(revision) > 0

    def applied() -> bool:  # the primary has its own write's event back from the feed
        own = primary.get("/v1/status", params={"path": uri, "sync_interval": "-1"})
        return own.headers["X-Dora-Revision"] == revision

    wait_for(applied, what="the primary did not apply its own write's event")
    calls = [
        ("/v1/status", {"path": uri}),
        ("/v1/read", {"path": uri, "offset": "10", "length": "20"}),
        (f"/webhdfs/v1/file{data}/d/a.bin", {"op": "GETFILESTATUS"}),
    ]
    for _ in range(2):  # asked of the primary, then from the near-cache
        for path, query in calls:
            before = passed_on(front)
            from_front = front.get(path, params=query)
            assert from_front.status_code == 200 and passed_on(front) == before
            own = primary.get("/v1/status", params={"path": uri, "sync_interval": "-1"})
            assert from_front.headers["X-Dora-Revision"] == own.headers["X-Dora-Revision"]
            assert own.headers["X-Dora-Revision"] == revision
    # One line per call the front answered, in the primary's format, in the worker's log (the
    # primary logs the front's own calls to it: /v1/status, /v1/locate, /v1/read by version).
    webhdfs = re.compile(
        r"GET /webhdfs/v1/file\S*a\.bin\?op=GETFILESTATUS 200 \d+B \S+ms caller=- cache=-$", re.M
    )
    reads = re.compile(
        r"GET /v1/read\?path=[^&\s]+&offset=10&length=20 200 20B \S+ms caller=- cache=(\w+)$", re.M
    )
    wait_for(lambda: len(webhdfs.findall(two.log_path.read_text())) == 2, what="no access lines")
    outcomes = reads.findall(two.log_path.read_text())
    assert len(outcomes) == 2 and outcomes[1] == "hit", outcomes
