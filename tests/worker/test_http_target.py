"""Request lines with raw UTF-8 bytes, as Hadoop's client sends non-ASCII paths, over a real
socket to the worker's HTTP protocol: served as the percent-encoded path would be, on one
keep-alive connection, with bodies passed through untouched."""

import socket
from pathlib import Path

from tests.integration.inprocess import serving
from worker.http_target import quote_high_bytes
from worker.service import WorkerService


def test_only_bytes_above_ascii_are_encoded() -> None:
    assert quote_high_bytes(b"GET /a b?x=1 HTTP/1.1") == b"GET /a b?x=1 HTTP/1.1"
    assert quote_high_bytes("/städte/日".encode()) == b"/st%C3%A4dte/%E6%97%A5"


def _answer(conn: socket.socket) -> tuple[int, bytes]:
    """One HTTP/1.1 answer with a Content-Length: its status and body."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += conn.recv(65536)
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    length = next(int(v) for k, _, v in (h.partition(": ") for h in lines) if k == "content-length")
    while len(rest) < length:
        rest += conn.recv(65536)
    return int(lines[0].split()[1]), rest[:length]


def test_raw_utf8_paths_on_a_keep_alive_connection(service: WorkerService, data_dir: Path) -> None:
    (data_dir / "städte").mkdir()
    (data_dir / "städte" / "日本.txt").write_bytes(b"hallo")
    base = f"/webhdfs/v1/file{data_dir}/städte"
    body = "grüße, 日本\n".encode()
    requests = [
        f"GET {base}/日本.txt?op=OPEN&data=true HTTP/1.1\r\nHost: h\r\n\r\n".encode(),
        # A body with bytes above ASCII and a line break: passed on as sent.
        (
            f"PUT {base}/neu-ö.txt?op=CREATE&data=true HTTP/1.1\r\nHost: h\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        ).encode()
        + body,
        f"GET {base}/ü?op=GETFILESTATUS HTTP/1.1\r\nHost: h\r\n\r\n".encode(),
    ]
    with serving(service) as port, socket.create_connection(("127.0.0.1", port)) as conn:
        conn.sendall(requests[0][:20])  # a request line split across reads
        conn.sendall(requests[0][20:])
        assert _answer(conn) == (200, b"hallo")
        conn.sendall(requests[1])
        assert _answer(conn)[0] == 201
        conn.sendall(requests[2])
        status, answer = _answer(conn)
    assert (data_dir / "städte" / "neu-ö.txt").read_bytes() == body
    assert status == 404 and b"FileNotFoundException" in answer
