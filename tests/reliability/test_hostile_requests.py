"""Requests as an outsider sends them, against real worker processes (issue 23): slow and
half-sent requests, oversized bodies, odd numbers, credentials in odd spellings, a full load
queue, a FIFO in place of a page file, a umask of 000, 20,000 path rules. Each must get an
answer in the documented shape (never a 500), leave no traceback in the worker's log, and hold
memory and descriptors within generous bounds."""

from __future__ import annotations

import contextlib
import hashlib
import os
import socket
import stat
import time
from pathlib import Path

import pytest

from bench.experiments.slowclient_bench import Sample, half_heads, outcomes, stalled_creates
from pagestore import modes
from tests.reliability.conftest import MakeWorker
from tests.reliability.support import RecordFigure, Worker, wait_for
from tests.worker.client.test_fastpath import reader_stats
from tests.worker.test_modes import too_open
from worker.client.filesystem import DoraFileSystem

pytestmark = pytest.mark.reliability

HUGE = "7" * 5000
TOKEN = "s3cret-token-of-the-worker"


@pytest.fixture
def data(tmp_path: Path) -> Path:
    root = tmp_path / "data"
    root.mkdir()
    (root / "f").write_bytes(bytes(range(256)) * 1024)  # 256 KB
    return root


def no_traceback(worker: Worker) -> None:
    log = (worker.work / "worker.log").read_text(errors="replace")
    assert "Traceback" not in log, worker.log_tail()


def test_slow_clients_are_cut_off_and_give_back_memory_and_descriptors(
    make_worker: MakeWorker, data: Path, figure: RecordFigure
) -> None:
    worker = make_worker(
        f"dora.worker.ufs.roots=file://{data}",
        "dora.worker.http.head.timeout=2s",
        "dora.worker.http.body.idle.timeout=2s",
        "dora.worker.http.max.concurrent.uploads=8",
    )
    idle = Sample.of(worker.pid)
    attack: list[socket.socket] = []
    try:
        attack += stalled_creates(worker.port, data, 32, 2 << 20)
        attack += half_heads(worker.port, 1000)
        under = Sample.of(worker.pid)
        # A caller that sends whole requests is still served.
        assert worker.get("/healthz").status_code == 200
        wait_for(lambda: Sample.of(worker.pid).fds <= idle.fds + 10, "descriptors given back")
        after = Sample.of(worker.pid)
        creates, heads = outcomes(attack[:32]), outcomes(attack[32:])
    finally:
        for sock in attack:
            sock.close()
    assert creates == {"408": 8, "503": 24}
    assert heads == {"408": 1000}
    assert after.rss_mb < idle.rss_mb + 150
    assert worker.metric("dora_http_idle_timeouts_total") >= 1008
    assert worker.metric("dora_http_uploads_refused_total") == 24
    assert worker.metric("dora_http_uploads_in_flight") == 0
    for name, sample in (("idle", idle), ("under attack", under), ("after the deadlines", after)):
        figure(f"RSS {name}", round(sample.rss_mb, 1), "MB")
        figure(f"open descriptors {name}", sample.fds, "")
    no_traceback(worker)


def test_a_body_read_whole_is_bounded_before_authentication(
    make_worker: MakeWorker, data: Path
) -> None:
    worker = make_worker(
        f"dora.worker.ufs.roots=file://{data}", f"dora.worker.security.token={TOKEN}"
    )
    url = worker.url + "/webhdfs/oauth2/token"
    idle = Sample.of(worker.pid)
    declared = worker.http.post(url, content=b"x" * (1 << 20))
    streamed = worker.http.post(url, content=(b"x" * (64 << 10) for _ in range(64)))
    assert (declared.status_code, streamed.status_code) == (413, 413)
    for answer in (declared, streamed):
        assert answer.json()["RemoteException"]["exception"] == "IOException"
        assert "exceeds the limit of 65536 bytes" in answer.json()["RemoteException"]["message"]
    granted = worker.http.post(
        url, data={"grant_type": "client_credentials", "client_secret": TOKEN}
    )
    assert granted.json()["access_token"] == TOKEN
    assert Sample.of(worker.pid).rss_mb < idle.rss_mb + 50
    no_traceback(worker)


def odd_numbers(data: Path) -> list[tuple[str, str, dict[str, str], dict[str, str], str]]:
    """(what, path, query, headers, the name the 400 must carry) for every numeric input."""
    uri = f"file://{data}/f"
    hdfs = f"/webhdfs/v1/file{data}/f"
    path_id = hashlib.sha256(uri.encode()).hexdigest()
    cases = []
    for value in ("²", "٣", HUGE, "1_000", " 5"):
        cases += [
            ("rest offset", "/v1/read", {"path": uri, "offset": value}, {}, "offset"),
            ("rest length", "/v1/read", {"path": uri, "length": value}, {}, "length"),
            ("locate offset", "/v1/locate", {"path": uri, "offset": value}, {}, "offset"),
            ("open offset", hdfs, {"op": "OPEN", "offset": value}, {}, '"offset"'),
            ("open length", hdfs, {"op": "OPEN", "length": value}, {}, '"length"'),
            ("blocks", hdfs, {"op": "GETFILEBLOCKLOCATIONS", "offset": value}, {}, '"offset"'),
            ("pages", hdfs, {"op": "GETPAGELOCATIONS", "length": value}, {}, '"length"'),
            ("alluxio page", f"/v1/file/{path_id}/page/{value}", {"ufsFullPath": uri}, {},
             "page index"),
        ]  # fmt: skip
    cases += [
        ("rest range", "/v1/read", {"path": uri}, {"Range": f"bytes={HUGE}-"}, "Range"),
        ("rest range end", "/v1/read", {"path": uri}, {"Range": f"bytes=0-{HUGE}"}, "Range"),
        ("object range", f"/v1/object/file{data}/f", {}, {"Range": f"bytes={HUGE}-"}, "Range"),
        ("alluxio to end", f"/v1/object/file{data}/f", {}, {"Range": f"bytes={HUGE}-{HUGE}"},
         "Range"),
    ]  # fmt: skip
    return cases


def test_odd_numbers_are_400s_naming_the_parameter_on_every_surface(
    make_worker: MakeWorker, data: Path
) -> None:
    worker = make_worker(f"dora.worker.ufs.roots=file://{data}")
    wrong = []
    for what, path, query, headers, name in odd_numbers(data):
        answer = worker.http.get(worker.url + path, params=query, headers=headers)
        body = answer.json()
        message = str(body.get("RemoteException", body).get("message"))
        if answer.status_code != 400 or name not in message or len(answer.text) > 1000:
            wrong.append(f"{what} {query or headers}"[:60] + f": {answer.status_code} {message}")
    assert wrong == []
    no_traceback(worker)


def test_credentials_in_any_spelling_stay_out_of_the_access_log(
    make_worker: MakeWorker, data: Path
) -> None:
    worker = make_worker(
        f"dora.worker.ufs.roots=file://{data}",
        f"dora.worker.security.token={TOKEN}",
        "dora.worker.http.access.log=true",
    )
    path = f"/webhdfs/v1/file{data}/f"
    for spelling in ("delegation", "Delegation", "DELEGATION", "%44elegation", "dElEgAtIoN"):
        answer = worker.http.get(f"{worker.url}{path}?op=GETFILESTATUS&{spelling}={TOKEN}")
        assert answer.status_code == 200, spelling
    wait_for(lambda: (worker.work / "worker.log").read_text().count("GETFILESTATUS") >= 5, "log")
    log = (worker.work / "worker.log").read_text()
    assert TOKEN not in log


def test_a_full_load_queue_answers_503_with_retry_after(
    make_worker: MakeWorker, data: Path
) -> None:
    worker = make_worker(f"dora.worker.ufs.roots=file://{data}", "dora.worker.load.queue.size=0")
    answer = worker.http.post(worker.url + "/v1/load", params={"path": f"file://{data}/f"})
    assert answer.status_code == 503
    assert answer.json()["error"] == "WorkerBusy"
    assert "dora.worker.load.queue.size" in answer.json()["message"]
    assert int(answer.headers["Retry-After"]) > 0
    no_traceback(worker)


def test_a_worker_started_under_umask_000_creates_nothing_others_can_write(
    umask_000: None, make_worker: MakeWorker, data: Path
) -> None:
    worker = make_worker(
        f"dora.worker.ufs.roots=file://{data}", "dora.worker.page.store.page.size=64KB"
    )
    assert worker.read(f"file://{data}/f").content == (data / "f").read_bytes()
    assert worker.get("/v1/local").status_code == 200
    state = worker.work / "state.json"
    assert stat.S_IMODE(state.stat().st_mode) == modes.PRIVATE_FILE  # it carries the token
    worker.stop()
    # The work directory itself and the log are the test harness's.
    made = [line for line in too_open(worker.work) if not line.startswith(f"{worker.work} ")]
    assert [line for line in made if "worker.log" not in line] == []


def test_a_fifo_in_place_of_a_page_file_is_a_miss_for_client_and_worker(
    make_worker: MakeWorker, data: Path
) -> None:
    worker = make_worker(
        f"dora.worker.ufs.roots=file://{data}", "dora.worker.page.store.page.size=64KB"
    )
    uri = f"file://{data}/f"
    expected = (data / "f").read_bytes()
    assert worker.read(uri).content == expected
    located = worker.get("/v1/locate", path=uri).json()
    for _, path, *_ in located["pages"]:
        os.unlink(path)
        os.mkfifo(path)
    fs = DoraFileSystem(workers=[worker.address], short_circuit=True, skip_instance_cache=True)
    started = time.monotonic()
    assert fs.cat_file(uri) == expected
    assert reader_stats(fs).get("miss_not_a_file", 0) >= 1  # the client met a FIFO
    assert worker.read(uri).content == expected
    assert time.monotonic() - started < 60  # a bound against hanging, not a timing
    no_traceback(worker)


def test_20k_path_rules_apply_as_one_rule_does(
    make_worker: MakeWorker, data: Path, tmp_path: Path
) -> None:
    sync = "dora.user.file.metadata.sync.interval"
    rules = [f"file://{data}/other-{i:05d} {sync}=0" for i in range(20_000)]
    rules.append(f"file://{data} dora.user.file.readtype.default=NO_CACHE")
    conf = tmp_path / "dora-site.properties"
    conf.write_text(f"dora.worker.path.conf={', '.join(rules)}\n")
    worker = make_worker(f"dora.worker.ufs.roots=file://{data}", conf=conf)
    hdfs = f"{worker.url}/webhdfs/v1/file{data}/f"
    assert worker.http.get(hdfs, params={"op": "GETFILESTATUS"}).status_code == 200
    assert worker.read(f"file://{data}/f").content == (data / "f").read_bytes()
    assert worker.metric("dora_passthrough_reads_total") == 1  # the NO_CACHE rule applied
    no_traceback(worker)


def test_an_unread_body_trickling_in_after_the_answer_does_not_keep_the_connection(
    make_worker: MakeWorker, data: Path
) -> None:
    worker = make_worker(
        f"dora.worker.ufs.roots=file://{data}", "dora.worker.http.max.write.size=1KB"
    )
    closed = False
    with socket.create_connection(("127.0.0.1", worker.port)) as sock:
        sock.sendall(
            f"PUT /v1/write?path=file://{data}/g HTTP/1.1\r\nHost: w\r\n"
            "Content-Length: 1000000\r\n\r\n".encode()
        )
        sock.settimeout(60)
        assert sock.recv(4096).startswith(b"HTTP/1.1 413 ")
        sock.settimeout(1)
        for _ in range(60):  # a byte a second, for longer than the worker lingers
            try:
                sock.sendall(b"x")
                closed = sock.recv(65536) == b""  # the rest of the answer, then EOF
            except TimeoutError:
                continue
            except OSError:
                closed = True
            if closed:
                break
    assert closed
    assert worker.metric("dora_http_idle_timeouts_total") == 1  # phase="linger"
    with socket.create_connection(("127.0.0.1", worker.port)) as sock:
        sock.settimeout(60)
        with contextlib.suppress(OSError):  # the worker may close before all of it is sent
            sock.sendall(b"GET /healthz HTTP/1.1\r\nX-Big: " + b"y" * (70 << 10))
        assert sock.recv(4096).startswith(b"HTTP/1.1 431 ")
    no_traceback(worker)
