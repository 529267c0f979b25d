"""Running a worker process: bind, serve, write the state file, watch owners, shut down
gracefully (stop accepting, finish in-flight requests, flush the metastore)."""

from __future__ import annotations

import asyncio
import gc
import importlib.util
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
from starlette.types import ASGIApp

from config import Config, ConfigError
from worker import keys
from worker.api import alluxio, alluxio_keys
from worker.api.app import create_app
from worker.cluster.node import ClusterNode
from worker.service import WorkerService

log = logging.getLogger(__name__)
OWNER_CHECK_SECONDS = 2.0
GRACEFUL_SECONDS = 30
# Idle keep-alive connections are closed by clients first (httpx after 5 s, the dora client
# included): a server that closed at the same moment would race a request sent on the closing
# connection, which the client then sees cut (ReadError) although nothing went wrong.
KEEP_ALIVE_SECONDS = 30
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
    """A listening socket; port 0 picks a free one. Raises OSError."""
    # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY only on sockets that say they are TCP,
    # and without it a keep-alive answer written in two parts waits out a delayed ACK (40 ms).
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # Accepted connections inherit a bounded send buffer: a client that reads a little of
        # an open-ended stream and hangs up (WebHDFS OPEN) then leaves ~one page read, not the
        # several MB an autotuned buffer absorbs (and the read-ahead that fills behind it).
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER)
        sock.bind((host, port))
        sock.listen(2048)
    except BaseException:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def listen(host: str, port: int, *names: str) -> socket.socket:
    """A socket listening on ``host:port``, which the property keys ``names`` set. Raises
    ConfigError naming them when it cannot be had (port taken, address not local)."""
    try:
        return bind(host, port)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise ConfigError(
            f"cannot listen on {host}:{port} ({', '.join(names)}): "
            f"{reason}; expected a free port on an address of this host"
        ) from None


# Python collects its young generation every 700 new objects by default, and each collection
# walks what is young; a worker makes objects by the hundred thousand (index entries, statuses),
# and a load of 100k small files spent a tenth of its time collecting. Rarer collections let
# cyclic garbage live a little longer, which a worker can afford.
GC_THRESHOLDS = (50_000, 20, 100)


def tune_gc() -> None:
    """Set the worker process's garbage collection thresholds (GC_THRESHOLDS)."""
    gc.set_threshold(*GC_THRESHOLDS)


def fast_protocols() -> tuple[str, type[asyncio.Protocol] | str]:
    """uvicorn's event loop and HTTP protocol: uvloop and httptools (C, several times the
    request rate of asyncio's loop and the pure-Python h11) where installed, else the pure
    Python ones. The httptools protocol is :class:`Utf8TargetProtocol`, which also accepts
    the raw UTF-8 paths Hadoop's client sends."""
    uvloop = importlib.util.find_spec("uvloop") is not None
    if importlib.util.find_spec("httptools") is None:
        return ("uvloop" if uvloop else "asyncio"), "h11"
    from worker.http_target import Utf8TargetProtocol

    return ("uvloop" if uvloop else "asyncio"), Utf8TargetProtocol


def serve(config: Config, options: ProcessOptions) -> int:
    """Run a worker in the foreground until SIGTERM/SIGINT or orphaning; the exit status.

    Raises ConfigError, with nothing left open, when the worker cannot start: a value that
    cannot be used, a port that cannot be had, a store that refuses its directory."""
    host = config.get(keys.BIND_HOST)
    sock = listen(host, config.get(keys.BIND_PORT), keys.BIND_HOST.name, keys.BIND_PORT.name)
    actual_port = sock.getsockname()[1]
    s3_port = config.get(alluxio_keys.S3_PORT)
    extra: list[socket.socket] = []
    try:
        if s3_port:
            extra.append(listen(host, s3_port, keys.BIND_HOST.name, alluxio_keys.S3_PORT.name))
        tune_gc()
        service = WorkerService.from_config(config)
    except BaseException:
        for opened in (sock, *extra):
            opened.close()
        raise
    node = ClusterNode.start(config, service, host, actual_port)
    app: ASGIApp = create_app(service)
    if s3_port:
        app = alluxio.objects_on_port(app, s3_port)
    loop, http = fast_protocols()
    server = uvicorn.Server(
        uvicorn.Config(
            app if node is None else node.wrap(app),
            log_level="warning",
            timeout_graceful_shutdown=GRACEFUL_SECONDS,
            timeout_keep_alive=KEEP_ALIVE_SECONDS,
            lifespan="off",
            log_config=None,
            loop=loop,
            http=http,
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
        server.run(sockets=[sock, *extra])
    finally:
        log.info("worker stopping: flushing the metastore and page store")
        if node is not None:
            node.close()  # leave the ring first, and persist the feed position
        service.close()
        if options.state_file is not None:
            options.state_file.unlink(missing_ok=True)
        for listener in (sock, *extra):
            listener.close()
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
