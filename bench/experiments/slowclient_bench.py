"""Slow clients against a real worker process: what ``--heads`` connections that send half a
request head, and ``--creates`` WebHDFS CREATEs that send ``--body-mb`` MB of their body and
stall, cost the worker in memory (RSS) and open descriptors, and whether its deadlines give
them back.

Run with ``.venv/bin/python -m bench.experiments.slowclient_bench`` (``-D key=value`` passes worker
properties, e.g. ``-D dora.worker.http.head.timeout=5s``). Starts ``dora worker start`` from this
interpreter's environment (``PYTHONPATH`` decides which code), reads ``/proc/<pid>`` idle, once
every attack connection is open, and ``--wait`` seconds later; counts the attack connections
the worker closed and what it answered them. Local loopback only; every connection and the
worker are closed at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import httpx

DORA = str(Path(sys.executable).with_name("dora"))


@dataclass
class Sample:
    """The worker's resident memory and open descriptors at one moment."""

    rss_mb: float
    fds: int

    @classmethod
    def of(cls, pid: int) -> Sample:
        rss = 0
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1]) * 1024
        return cls(rss / 2**20, len(os.listdir(f"/proc/{pid}/fd")))

    def __str__(self) -> str:
        return f"RSS {self.rss_mb:7.1f} MB, {self.fds:5d} open descriptors"


def half_heads(port: int, count: int) -> list[socket.socket]:
    """``count`` connections that each send a request line and one header, never the end."""
    opened = []
    for _ in range(count):
        sock = socket.create_connection(("127.0.0.1", port))
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: worker\r\n")
        opened.append(sock)
    return opened


def stalled_creates(port: int, root: Path, count: int, body: int) -> list[socket.socket]:
    """``count`` WebHDFS CREATEs (the data step) declaring 1 GB and sending ``body`` bytes."""
    opened, chunk = [], b"x" * (1 << 20)
    for i in range(count):
        sock = socket.create_connection(("127.0.0.1", port))
        target = f"/webhdfs/v1/file{root}/stalled-{i}?op=CREATE&data=true&overwrite=true"
        sock.sendall(
            f"PUT {target} HTTP/1.1\r\nHost: worker\r\nContent-Length: {1 << 30}\r\n\r\n".encode()
        )
        sock.setblocking(False)
        sent = 0
        while sent < body:
            # A socket the worker closed (or stopped reading) ends the sending.
            _, writable, _ = select.select([], [sock], [], 5)
            if not writable:
                break
            try:
                sent += sock.send(chunk[: body - sent])
            except OSError:
                break
        opened.append(sock)
    return opened


def outcomes(sockets: list[socket.socket]) -> Counter[str]:
    """What each connection got so far: ``open`` (nothing), ``closed`` (no answer), or the
    status of the answer the worker wrote before closing (``408``, ``503``, ...)."""
    seen: Counter[str] = Counter()
    for sock in sockets:
        sock.setblocking(False)
        try:
            data = sock.recv(4096)
        except BlockingIOError:
            seen["open"] += 1
            continue
        except OSError:
            data = b""
        seen[data.split(b" ", 2)[1].decode() if data.startswith(b"HTTP/1.1 ") else "closed"] += 1
    return seen


def start_worker(work: Path, root: Path, defines: list[str]) -> tuple[subprocess.Popen[bytes], int]:
    """``dora worker start`` on a free port; the process and its port."""
    state = work / "state.json"
    args = [DORA, "worker", "start", "--state-file", str(state),
            *(f"-D{d}" for d in ["dora.worker.http.port=0", f"dora.work.dir={work}",
                                 f"dora.worker.ufs.roots=file://{root}", *defines])]  # fmt: skip
    log = (work / "worker.log").open("ab")
    process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while not state.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise RuntimeError(f"the worker did not start; see {work / 'worker.log'}")
        time.sleep(0.05)
    return process, json.loads(state.read_text())["port"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--heads", type=int, default=1000)
    parser.add_argument("--creates", type=int, default=32)
    parser.add_argument("--body-mb", type=int, default=8)
    parser.add_argument("--wait", type=float, default=40.0)
    parser.add_argument("-D", dest="defines", action="append", default=[])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="slowclient-bench-") as temp:
        work, root = Path(temp) / "work", Path(temp) / "data"
        work.mkdir()
        root.mkdir()
        process, port = start_worker(work, root, args.defines)
        attack: list[socket.socket] = []
        try:
            print(f"idle:            {Sample.of(process.pid)}")
            attack += stalled_creates(port, root, args.creates, args.body_mb << 20)
            attack += half_heads(port, args.heads)
            time.sleep(2)
            print(f"under attack:    {Sample.of(process.pid)}")
            answered = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=30)
            print(f"a normal request under attack: {answered.status_code}")
            time.sleep(args.wait)
            print(f"{args.wait:g} s later:     {Sample.of(process.pid)}")
            creates, heads = attack[: args.creates], attack[args.creates :]
            print(f"stalled creates: {dict(outcomes(creates))}")
            print(f"half heads:      {dict(outcomes(heads))}")
        finally:
            for sock in attack:
                sock.close()
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=60)


if __name__ == "__main__":
    main()
