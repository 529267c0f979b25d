"""The primary's side of ``dora.worker.processes``: its front processes, started with it,
restarted when one dies, drained before it stops; its private unix socket, which the fronts
pass calls to; and the fronts' metrics, summed into its own on each scrape."""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import uvicorn

from config import Config, ConfigError
from config.loader import Source
from worker import keys, logs
from worker.procs import keys as procs_keys
from worker.procs.summed import summed

log = logging.getLogger(__name__)
METRICS_PATH = "/_front/metrics"  # worker.procs.frontproc answers it on its private socket
FRONT_MODULE = "worker.procs.frontproc"
CHECK_SECONDS = 0.5
RESTART_SECONDS = 5.0
START_SECONDS = 60.0
SCRAPE_SECONDS = 2.0


def unix_listener(path: str) -> socket.socket:
    """A unix socket listening at ``path`` (replacing a stale one), for this user only."""
    if os.path.exists(path):
        os.unlink(path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(path)
        os.chmod(path, 0o600)
        sock.listen(2048)
    except BaseException:
        sock.close()
        raise
    return sock


class Fronts:
    """The front processes of one primary, each started as ``python -m worker.procs.frontproc``
    with the primary's settings in its environment.

    Thread-safe: the process list is under one lock; a monitor thread restarts a front that
    exited until :meth:`drain` (graceful: SIGTERM, then wait) is called."""

    def __init__(self, config: Config, port: int, count: int, grace: float) -> None:
        self._dir = Path(tempfile.mkdtemp(prefix="dora-procs-"))  # 0700: sockets of this user
        self._primary_path = str(self._dir / "primary.sock")
        self.primary_socket = unix_listener(self._primary_path)
        self._env = _environment(config, port)
        self._grace = grace
        self._lock = threading.Lock()
        self._stopping = False
        self._procs = [self._spawn(i) for i in range(count)]
        self._started = [time.monotonic()] * count
        threading.Thread(target=self._monitor, name="dora-fronts", daemon=True).start()

    @classmethod
    def start(cls, config: Config, port: int, grace: float) -> Fronts | None:
        """The fronts ``dora.worker.processes`` asks for, once each listens; None for one
        process (the primary alone)."""
        count = config.get(procs_keys.PROCESSES) - 1
        if count < 1:
            return None
        # httpx logs every call at INFO: here, each scrape of a front's metrics.
        logging.getLogger("httpx").setLevel(logging.WARNING)
        fronts = cls(config, port, count, grace)
        try:
            fronts.wait_listening()
        except BaseException:
            fronts.close()
            raise
        log.info("worker serving with %d front processes: %s", count, fronts.pids())
        return fronts

    def socket_of(self, index: int) -> str:
        """The private unix socket of front ``index``."""
        return str(self._dir / f"front-{index}.sock")

    def pids(self) -> list[int]:
        with self._lock:
            return [p.pid for p in self._procs]

    def wait_listening(self) -> None:
        """Wait until every front listens on its private socket (it binds its public one
        first). Raises ConfigError if one exits first (its error is in the worker's output)
        or does not listen within START_SECONDS."""
        deadline = time.monotonic() + START_SECONDS
        for index, proc in enumerate(self._procs):
            while not os.path.exists(self.socket_of(index)):
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise ConfigError(
                        f"front process {index} of {procs_keys.PROCESSES.name} did not start "
                        f"(exit status {proc.returncode}; its error is logged above)"
                    )
                time.sleep(0.05)

    def server(self, config: uvicorn.Config) -> uvicorn.Server:
        """A uvicorn server for the primary that drains the fronts before it stops."""
        return _DrainingServer(config, self)

    def summed(self, own: bytes) -> bytes:
        """The primary's metrics text ``own`` with every front's counters added in (a front
        that does not answer within SCRAPE_SECONDS is left out)."""
        texts = []
        for index in range(len(self._procs)):
            transport = httpx.HTTPTransport(uds=self.socket_of(index))
            try:
                with httpx.Client(transport=transport, timeout=SCRAPE_SECONDS) as client:
                    texts.append(client.get(f"http://front{METRICS_PATH}").content)
            except httpx.HTTPError as exc:
                log.warning("front process %d's metrics left out: %s", index, exc)
        return summed(own, texts)

    def drain(self) -> None:
        """Stop every front gracefully (each finishes its in-flight requests, which may still
        need the primary), killing one that outlasts the grace period."""
        with self._lock:
            self._stopping = True
            procs = list(self._procs)
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + self._grace
        for proc in procs:
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                log.warning("front process %d did not stop in time: killed", proc.pid)
                proc.kill()
                proc.wait()

    def close(self) -> None:
        """Drain (if not done yet) and remove the private sockets."""
        self.drain()
        self.primary_socket.close()
        shutil.rmtree(self._dir, ignore_errors=True)

    def _spawn(self, index: int) -> subprocess.Popen[bytes]:
        path = self.socket_of(index)
        if os.path.exists(path):
            os.unlink(path)
        args = ["--primary-socket", self._primary_path, "--socket", path,
                "--primary-pid", str(os.getpid())]  # fmt: skip
        return subprocess.Popen([sys.executable, "-m", FRONT_MODULE, *args], env=self._env)

    def _monitor(self) -> None:
        while True:
            time.sleep(CHECK_SECONDS)
            with self._lock:
                if self._stopping:
                    return
                now = time.monotonic()
                for index, proc in enumerate(self._procs):
                    # One that dies young waits RESTART_SECONDS: no tight loop of crashes.
                    if proc.poll() is None or now - self._started[index] < RESTART_SECONDS:
                        continue
                    log.warning("front process %d exited (%s): restarting it", proc.pid,
                                proc.returncode)  # fmt: skip
                    self._procs[index] = self._spawn(index)
                    self._started[index] = now


class _DrainingServer(uvicorn.Server):
    """A uvicorn server whose shutdown first drains the fronts: they pass calls to it until
    their last in-flight request is answered."""

    def __init__(self, config: uvicorn.Config, fronts: Fronts) -> None:
        super().__init__(config)
        self._fronts = fronts

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        await asyncio.to_thread(self._fronts.drain)
        await super().shutdown(sockets)


def _environment(config: Config, port: int) -> dict[str, str]:
    """The environment of a front: this process's, plus every setting not at its default as
    its ``DORA_*`` variable (the environment outranks a site file, so each front runs with the
    primary's values), the port the primary listens on and the primary's log format."""
    env = dict(os.environ)
    for setting in config.settings():
        if setting.source is not Source.DEFAULT and setting.text is not None:
            env[setting.key.env_name] = setting.text
    env[keys.BIND_PORT.env_name] = str(port)
    # `dora worker start --log-format` outranks the key and reaches only the root logger.
    if any(isinstance(h.formatter, logs.JsonFormatter) for h in logging.getLogger().handlers):
        env[logs.LOG_FORMAT.env_name] = "json"
    return env
