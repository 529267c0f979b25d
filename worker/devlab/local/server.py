"""What the local servers of the demo, the benchmarks and the tests share (SeaweedFS in
:mod:`worker.devlab.local.s3`, etcd in :mod:`worker.devlab.local.etcd`): one process in a session of
its own, its output in a log file in its data directory, a wait until it answers, and a stop by
PID (SIGTERM, then SIGKILL)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Self

Launcher = Callable[[Sequence[str]], list[str]]


class LocalServer(ABC):
    """One server process on ``host`` (127.0.0.1 unless the lab runs it on an emulated host:
    then ``launcher`` wraps its command line to run there), usable as a context manager. A
    subclass names it (``name``, for messages; ``log_name``, its log file), builds its command
    line and says in :meth:`_ready` whether it answers. Not thread-safe."""

    name: str
    log_name: str
    poll_seconds = 0.1

    def __init__(self, data_dir: Path, host: str = "127.0.0.1", launcher: Launcher = list) -> None:
        self.data_dir = data_dir
        self.host = host
        self.launcher = launcher
        self.process: subprocess.Popen[bytes] | None = None

    @abstractmethod
    def start(self, timeout: float = 60.0) -> Self:
        """Start the server and wait until it answers (RuntimeError past ``timeout``; each
        server has its own default)."""

    @abstractmethod
    def _ready(self) -> bool:
        """Whether the running server answers as it should by now."""

    def _launch(
        self,
        args: list[str],
        timeout: float,
        env: dict[str, str] | None = None,
        append: bool = False,
    ) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        with (self.data_dir / self.log_name).open("ab" if append else "wb") as log:
            self.process = subprocess.Popen(
                self.launcher(args),
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited early; see {self.data_dir / self.log_name}")
            if self._ready():
                return
            time.sleep(self.poll_seconds)
        self.stop()
        raise RuntimeError(f"{self.name} did not become ready in {timeout}s")

    def stop(self) -> None:
        """Stop the server by PID (SIGTERM, then SIGKILL) and reap it."""
        if self.process is None or self.process.poll() is not None:
            return
        self._signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._signal(signal.SIGKILL)
            self.process.wait()

    def kill(self) -> None:
        """SIGKILL the server (a crash) and reap it."""
        if self.process is None or self.process.poll() is not None:
            return
        self._signal(signal.SIGKILL)
        self.process.wait()

    def _signal(self, sig: signal.Signals) -> None:
        assert self.process is not None
        os.killpg(self.process.pid, sig)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
