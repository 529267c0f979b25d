"""Running a worker process: bind, serve, write the state file, watch owners, reload its files
on SIGHUP (:mod:`worker.hangup`), shut down gracefully (stop accepting, finish in-flight
requests, flush the metastore)."""

from __future__ import annotations

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
from pagestore import modes
from worker import keys, malloc, memtrace
from worker.api import alluxio, alluxio_keys
from worker.api import keys as api_keys
from worker.api.app import create_app
from worker.api.s3 import call as s3_call
from worker.api.s3 import keys as s3_keys
from worker.api.s3 import routing as s3
from worker.assembly import Assembly
from worker.hangup import Hangups
from worker.httpproto import SlowClientPolicy, protocol_class
from worker.procs import keys as procs_keys
from worker.procs.supervisor import Fronts
from worker.service import WorkerService
from worker.tls.server import ServerTls, reloading, warn_plaintext

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

    ``state_file`` gets ``{"pid", "host", "port", "scheme", "token", "started_at"}`` once the socket
    listens and is removed at exit; with ``owners_dir`` the worker exits by itself once no
    process whose PID names a file in that directory is alive."""

    state_file: Path | None = None
    owners_dir: Path | None = None


def bind(host: str, port: int, reuse_port: bool = False) -> socket.socket:
    """A listening socket; port 0 picks a free one. With ``reuse_port``, other sockets with
    it may listen on the same port and the kernel spreads connections over them (the worker's
    processes, ``dora.worker.processes``). Raises OSError."""
    # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY only on sockets that say they are TCP,
    # and without it a keep-alive answer written in two parts waits out a delayed ACK (40 ms).
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if reuse_port:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
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


def listen(host: str, port: int, *names: str, reuse_port: bool = False) -> socket.socket:
    """A socket listening on ``host:port``, which the property keys ``names`` set. Raises
    ConfigError naming them when it cannot be had (port taken, address not local)."""
    try:
        return bind(host, port, reuse_port)
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


def event_loop() -> str:
    """uvicorn's event loop: uvloop (C, several times the request rate of asyncio's loop)
    where installed, else asyncio's, which behaves the same."""
    return "uvloop" if importlib.util.find_spec("uvloop") is not None else "asyncio"


class DeliberateCuts(logging.Filter):
    """Drops uvicorn's ERROR for an answer the app ended short, since the worker's app does
    that only on purpose: ``worker.api.app.CutShort`` cuts a body once an error can no longer
    be answered (a file that changed under a pinned stream) and logs the reason itself, one
    WARNING line; uvicorn's generic line would report the same cut again as an error. An
    unknown error still reaches uvicorn as an exception, with its traceback."""

    UNCOMPLETED = "ASGI callable returned without completing response."

    def filter(self, record: logging.LogRecord) -> bool:
        return record.msg != self.UNCOMPLETED


_DELIBERATE_CUTS = DeliberateCuts()


def uvicorn_config(
    app: ASGIApp, config: Config, service: WorkerService, tls: ServerTls | None = None
) -> uvicorn.Config:
    """How uvicorn serves ``app``: httptools' parser (a dependency: C, several times the
    request rate of h11) with the worker's deadlines against slow clients
    (``worker.httpproto``), over ``tls``'s context when given (one the worker reloads in place
    when its files are replaced), graceful shutdown, no logging of its own."""
    logging.getLogger("uvicorn.error").addFilter(_DELIBERATE_CUTS)  # once: addFilter checks
    timeouts = service.metrics.idle_timeouts
    policy = SlowClientPolicy(
        head_timeout=config.get(api_keys.HEAD_TIMEOUT) / 1000,
        expired=lambda phase: timeouts.labels(phase).inc(),
    )
    return uvicorn.Config(
        app,
        log_level="warning",
        timeout_graceful_shutdown=GRACEFUL_SECONDS,
        timeout_keep_alive=KEEP_ALIVE_SECONDS,
        lifespan="off",
        log_config=None,
        loop=event_loop(),
        http=protocol_class(policy),
        ssl_context_factory=None if tls is None else lambda _config, _default: tls.context,
    )


def serve(config: Config, options: ProcessOptions) -> int:
    """Run a worker in the foreground until SIGTERM/SIGINT or orphaning; the exit status.

    Raises ConfigError, with nothing left open, when the worker cannot start: a value that
    cannot be used, a port that cannot be had, a store that refuses its directory."""
    host = config.get(keys.BIND_HOST)
    listeners, tls, assembly = _open(config, host)
    service = assembly.service
    actual_port = listeners[0].getsockname()[1]
    assembly.start(host, actual_port)
    app: ASGIApp = create_app(service)
    if s3_port := config.get(alluxio_keys.S3_PORT):
        app = alluxio.objects_on_port(app, s3_port)
    if s3_api_port := config.get(s3_keys.PORT):
        app = s3.on_port(app, s3_api_port, config.get(s3_keys.DOMAIN))
        log.info("S3 endpoint on %s://%s:%d", scheme(tls), host, s3_api_port)
    served = uvicorn_config(assembly.wrap(app), config, service, tls)
    # The front processes (dora.worker.processes > 1) share the port and pass calls on to the
    # primary's private socket; the primary drains them before it stops.
    fronts = Fronts.start(config, actual_port, GRACEFUL_SECONDS)
    server = _server(served, service, listeners, fronts)
    log.info("worker listening on %s://%s:%d (roots: %s)", scheme(tls), host, actual_port,
             ", ".join(service.roots.roots) or "none")  # fmt: skip
    warn_plaintext(config, host, tls, keys.TOKEN.name)
    _watch(server, options, (host, actual_port, scheme(tls)))
    # uvicorn shuts down gracefully on SIGTERM/SIGINT, then re-raises the signal into the
    # handler that was installed before it: make that one a no-op so the flush below runs.
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, _stopping)
    try:
        with (
            reloading(tls),
            Hangups(tls, service.rules if service.rules.path else None).installed(),
            malloc.trimming(config),
            memtrace.tracing(config),
        ):
            server.run(sockets=listeners)
    finally:
        log.info("worker stopping: flushing the metastore and page store")
        if fronts is not None:
            fronts.close()
        assembly.close()  # the feeds, the ring (persisting the feed position), the service
        if options.state_file is not None:
            options.state_file.unlink(missing_ok=True)
        for listener in listeners:
            listener.close()
    log.info("worker stopped")
    return 0


def _server(
    served: uvicorn.Config,
    service: WorkerService,
    listeners: list[socket.socket],
    fronts: Fronts | None,
) -> uvicorn.Server:
    """The primary's server; with fronts, one that drains them first when it stops, also
    listening on their private socket, and whose metrics add theirs."""
    if fronts is None:
        return uvicorn.Server(served)
    service.metrics.combine = fronts.summed
    listeners.append(fronts.primary_socket)
    return fronts.server(served)


def _open(config: Config, host: str) -> tuple[list[socket.socket], ServerTls | None, Assembly]:
    """The listening sockets (the worker's port first, then the Alluxio S3 port and the S3
    endpoint's port if set), the TLS settings and the worker's parts; on any failure, closes
    what it opened and raises."""
    shared = config.get(procs_keys.PROCESSES) > 1
    listeners = [listen(host, config.get(keys.BIND_PORT), keys.BIND_HOST.name,
                        keys.BIND_PORT.name, reuse_port=shared)]  # fmt: skip
    try:
        if s3_port := config.get(alluxio_keys.S3_PORT):
            listeners.append(listen(host, s3_port, keys.BIND_HOST.name, alluxio_keys.S3_PORT.name))
        if s3_api_port := config.get(s3_keys.PORT):
            listeners.append(listen(host, s3_api_port, keys.BIND_HOST.name, s3_keys.PORT.name))
        s3_call.check(config)  # the app binds the S3 endpoint after the service is open
        tls = ServerTls.from_config(config)
        tune_gc()
        return listeners, tls, Assembly.open(config)
    except BaseException:
        for opened in listeners:
            opened.close()
        raise


def _watch(
    server: uvicorn.Server, options: ProcessOptions, announced: tuple[str, int, str]
) -> None:
    """Start the daemon threads that announce the worker once it listens and, with an owners
    directory, stop it when its last owner is gone."""
    watchers = [threading.Thread(target=_announce, args=(server, options, *announced))]
    if options.owners_dir is not None:
        watchers.append(threading.Thread(target=_watch_owners, args=(server, options.owners_dir)))
    for thread in watchers:
        thread.daemon = True
        thread.start()


def _stopping(sig: int, frame: FrameType | None) -> None:
    log.info("worker received %s", signal.Signals(sig).name)


def scheme(tls: ServerTls | None) -> str:
    """The URL scheme clients reach a worker with this TLS (or none) by."""
    return "http" if tls is None else "https"


def _announce(
    server: uvicorn.Server, options: ProcessOptions, host: str, port: int, url_scheme: str
) -> None:
    while not server.started and not server.should_exit:
        time.sleep(0.02)
    if options.state_file is None or server.should_exit:
        return
    state = {
        "pid": os.getpid(),
        "host": host,
        "port": port,
        "scheme": url_scheme,
        "token": secrets.token_hex(16),
        "started_at": time.time(),
    }
    temp = options.state_file.with_name(options.state_file.name + ".tmp")
    modes.write_file(temp, json.dumps(state).encode(), modes.PRIVATE_FILE)  # it holds a token
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
