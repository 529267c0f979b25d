"""Running a worker process: bind, serve, write the state file, watch owners, shut down
gracefully (stop accepting, finish in-flight requests, flush the metastore)."""

from __future__ import annotations

import json
import logging
import os
import secrets
import signal
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

import uvicorn

from config import Config
from worker import keys
from worker.api.app import create_app
from worker.service import WorkerService

log = logging.getLogger(__name__)
OWNER_CHECK_SECONDS = 2.0
GRACEFUL_SECONDS = 30
SEND_BUFFER = 256 << 10


@dataclass(frozen=True)
class ProcessOptions:
    """What the process around the service does: where it announces itself and whom it serves.

    ``state_file`` gets ``{"pid", "host", "port", "token", "started_at"}`` once the socket
    listens and is removed at exit; with ``owners_dir`` the worker exits by itself once no
    process whose PID names a file in that directory is alive."""

    state_file: Path | None = None
    owners_dir: Path | None = None


def bind(host: str, port: int) -> socket.socket:
    """A listening socket; port 0 picks a free one."""
    # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY only on sockets that say they are TCP,
    # and without it a keep-alive answer written in two parts waits out a delayed ACK (40 ms).
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Accepted connections inherit a bounded send buffer: a client that reads a little of an
    # open-ended stream and hangs up (WebHDFS OPEN) then leaves ~one page read, not the several
    # MB an autotuned buffer absorbs (and the read-ahead that fills behind it).
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER)
    sock.bind((host, port))
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def serve(config: Config, options: ProcessOptions) -> int:
    """Run a worker in the foreground until SIGTERM/SIGINT or orphaning; the exit status."""
    host, port = config.get(keys.BIND_HOST), config.get(keys.BIND_PORT)
    sock = bind(host, port)
    actual_port = sock.getsockname()[1]
    service = WorkerService.from_config(config)
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(service),
            log_level="warning",
            timeout_graceful_shutdown=GRACEFUL_SECONDS,
            lifespan="off",
            log_config=None,
        )
    )
    log.info("worker listening on http://%s:%d (roots: %s)", host, actual_port,
             ", ".join(service.roots.roots) or "none")  # fmt: skip
    watchers = [threading.Thread(target=_announce, args=(server, options, host, actual_port))]
    if options.owners_dir is not None:
        watchers.append(threading.Thread(target=_watch_owners, args=(server, options.owners_dir)))
    for thread in watchers:
        thread.daemon = True
        thread.start()
    # uvicorn shuts down gracefully on SIGTERM/SIGINT, then re-raises the signal into the
    # handler that was installed before it: make that one a no-op so the flush below runs.
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, _stopping)
    try:
        server.run(sockets=[sock])
    finally:
        log.info("worker stopping: flushing the metastore and page store")
        service.close()
        if options.state_file is not None:
            options.state_file.unlink(missing_ok=True)
        sock.close()
    log.info("worker stopped")
    return 0


def _stopping(sig: int, frame: FrameType | None) -> None:
    log.info("worker received %s", signal.Signals(sig).name)


def _announce(server: uvicorn.Server, options: ProcessOptions, host: str, port: int) -> None:
    while not server.started and not server.should_exit:
        time.sleep(0.02)
    if options.state_file is None or server.should_exit:
        return
    state = {
        "pid": os.getpid(),
        "host": host,
        "port": port,
        "token": secrets.token_hex(16),
        "started_at": time.time(),
    }
    temp = options.state_file.with_name(options.state_file.name + ".tmp")
    temp.write_text(json.dumps(state))
    temp.replace(options.state_file)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    return True


def live_owners(owners_dir: Path) -> list[int]:
    """PIDs named by files in ``owners_dir`` that are still alive."""
    pids = []
    for entry in owners_dir.iterdir() if owners_dir.is_dir() else ():
        if entry.name.isdigit() and _alive(int(entry.name)):
            pids.append(int(entry.name))
    return pids


def _watch_owners(server: uvicorn.Server, owners_dir: Path) -> None:
    """Ask the server to exit once two checks in a row find no live owner."""
    misses = 0
    while not server.should_exit:
        time.sleep(OWNER_CHECK_SECONDS)
        misses = 0 if live_owners(owners_dir) else misses + 1
        if misses >= 2:
            log.info("no owning process is alive (%s): shutting down", owners_dir)
            server.should_exit = True
