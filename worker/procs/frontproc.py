"""A front process: ``python -m worker.procs.frontproc``, started and restarted by the primary
(:mod:`worker.procs.supervisor`), never by hand.

It reads the worker's configuration from the environment the primary gives it (every setting
the primary runs with, as ``DORA_*`` variables), listens on the worker's host and port beside the
primary (SO_REUSEPORT) and on a private unix socket of its own (where the primary reads its
metrics), and exits, gracefully, on SIGTERM or once the primary is gone.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import uvicorn
from starlette.types import Receive, Scope, Send

from config import Config, load_config
from ufs import keys as ufs_keys
from ufs.roots import MountRoots
from worker import keys, logs
from worker.api import keys as api_keys
from worker.api.webhdfs_paths import Namespace
from worker.common import client_keys
from worker.httpproto import SlowClientPolicy, protocol_class
from worker.keys import build_registry
from worker.procs.front import FrontApp
from worker.procs.frontmetrics import FrontMetrics
from worker.procs.proxy import primary_client
from worker.procs.supervisor import METRICS_PATH, unix_listener
from worker.server import GRACEFUL_SECONDS, KEEP_ALIVE_SECONDS, bind, event_loop, tune_gc
from worker.tls.server import ServerTls, reloading

log = logging.getLogger(__name__)
PARENT_CHECK_SECONDS = 1.0


class PrivateRoutes:
    """The front app, plus :data:`METRICS_PATH` for calls on the private unix socket (whose
    ``server`` address has no port). Stateless beyond its parts."""

    def __init__(self, app: FrontApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        server = scope.get("server")
        if (
            scope["type"] == "http"
            and scope["path"] == METRICS_PATH
            and server
            and server[1] is None
        ):
            body = self.app.metrics.render()
            headers = [(b"content-type", b"text/plain; version=0.0.4"),
                       (b"content-length", str(len(body)).encode())]  # fmt: skip
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": body, "more_body": False})
            return
        await self.app(scope, receive, send)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m worker.procs.frontproc")
    parser.add_argument("--primary-socket", required=True)
    parser.add_argument("--socket", required=True)
    parser.add_argument("--primary-pid", type=int, required=True)
    args = parser.parse_args(argv)
    config = load_config(build_registry())
    logs.configure(config.get(logs.LOG_FORMAT))
    # httpx logs every call at INFO: here, each call to the primary.
    logging.getLogger("httpx").setLevel(logging.WARNING)
    tune_gc()
    tls = ServerTls.from_config(config)
    public = bind(config.get(keys.BIND_HOST), config.get(keys.BIND_PORT), reuse_port=True)
    private = unix_listener(args.socket)
    metrics = FrontMetrics()
    app = FrontApp(
        primary_client(args.primary_socket),
        config.get(keys.TOKEN),
        metrics,
        Namespace(_roots(config)),
        access_log=config.get(api_keys.ACCESS_LOG),
        redirects=not config.get(client_keys.ETCD_ENDPOINTS),
    )
    policy = SlowClientPolicy(
        head_timeout=config.get(api_keys.HEAD_TIMEOUT) / 1000,
        expired=lambda phase: metrics.idle_timeouts.labels(phase).inc(),
    )
    server = uvicorn.Server(
        uvicorn.Config(
            PrivateRoutes(app),
            log_level="warning",
            timeout_graceful_shutdown=GRACEFUL_SECONDS,
            timeout_keep_alive=KEEP_ALIVE_SECONDS,
            lifespan="off",
            log_config=None,
            loop=event_loop(),
            http=protocol_class(policy),
            ssl_context_factory=None if tls is None else lambda _c, _d: tls.context,
        )
    )
    watcher = threading.Thread(target=_watch_primary, args=(server, args.primary_pid), daemon=True)
    watcher.start()
    try:
        with reloading(tls):
            server.run(sockets=[public, private])
    finally:
        public.close()
        private.close()
        Path(args.socket).unlink(missing_ok=True)
        if os.getppid() != args.primary_pid:
            _clean_after(Path(args.primary_socket))
    return 0


def _roots(config: Config) -> MountRoots:
    roots: list[str] = config.get(ufs_keys.ROOTS)
    return MountRoots(roots)


def _clean_after(primary_socket: Path) -> None:
    """Remove what a killed primary left: its socket and, once the last front has removed its
    own, their directory."""
    primary_socket.unlink(missing_ok=True)
    with contextlib.suppress(OSError):  # a sibling's socket is still there: it removes it
        primary_socket.parent.rmdir()


def _watch_primary(server: uvicorn.Server, primary: int) -> None:
    """Stop once the primary is gone (killed, so it could not stop this process itself)."""
    while not server.should_exit:
        time.sleep(PARENT_CHECK_SECONDS)
        if os.getppid() != primary:
            log.info("front process %d: the primary %d is gone; stopping", os.getpid(), primary)
            server.should_exit = True


if __name__ == "__main__":
    raise SystemExit(main())
