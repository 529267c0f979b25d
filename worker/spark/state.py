"""The files of a sidecar's state directory and what they say: the worker's own state file
(``worker.json``, written by ``dora worker start --state-file``) and ``launch.json`` (the
settings and bearer token it was started with), plus the checks that a recorded worker is
really ours and answers."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from pagestore import modes
from worker.spark import procs

STATE_FILE = "worker.json"
LAUNCH_FILE = "launch.json"
LOCK_FILE = "lock"
OWNERS_DIR = "owners"
LOG_FILE = "worker.log"
WORK_SUBDIR = "work"
HEALTH_TIMEOUT_S = 2.0


class SidecarError(RuntimeError):
    """The host's worker could not be started, reached or reused."""


@dataclass(frozen=True)
class RunningWorker:
    """A running worker: what it wrote to its state file, plus the bearer token it was started
    with (kept in ``launch.json``; None for a worker started some other way)."""

    pid: int
    host: str
    port: int
    instance: str
    started_at: float
    token: str | None = None
    scheme: str = "http"

    @property
    def address(self) -> str:
        # A worker bound to every interface is still reached over loopback.
        host = "127.0.0.1" if self.host in ("", "0.0.0.0", "::") else self.host
        return f"{host}:{self.port}"

    @property
    def url(self) -> str:
        """The worker's base URL, in the scheme it serves (https with TLS keys)."""
        return f"{self.scheme}://{self.address}"

    @classmethod
    def from_dict(cls, data: dict[str, Any], token: str | None) -> RunningWorker:
        return cls(
            pid=int(data["pid"]),
            host=str(data["host"]),
            port=int(data["port"]),
            instance=str(data.get("token") or ""),
            started_at=float(data.get("started_at") or 0.0),
            token=token,
            scheme=str(data.get("scheme") or "http"),
        )


def read_launch(root: Path) -> dict[str, Any]:
    """``launch.json``: {"settings": fingerprints, "token": bearer token}, or {} if absent."""
    try:
        launch: dict[str, Any] = json.loads((root / LAUNCH_FILE).read_text())
    except (OSError, ValueError):
        return {}
    return launch


def read_state(root: Path) -> RunningWorker | None:
    """The worker the state file names (it may be dead or hung: see is_ours, answers)."""
    try:
        state = json.loads((root / STATE_FILE).read_text())
        return RunningWorker.from_dict(state, read_launch(root).get("token"))
    except (OSError, ValueError, KeyError, TypeError):
        # Absent, or left half-written by a crash: either way no usable worker.
        return None


def is_ours(root: Path, pid: int) -> bool:
    """Whether PID is alive and is a worker started for this state dir (not a reused PID)."""
    args = procs.cmdline(pid)
    return procs.process_alive(pid) and str(root / STATE_FILE) in args


def answers(info: RunningWorker) -> bool:
    """Whether the worker answers its liveness probe now, in the scheme it serves.

    Over https the worker's certificate is not verified, as the kubelet's HTTPS probes do not:
    the process is known to be ours (:func:`is_ours`), the probe sends no credential, and the
    certificate need not name the loopback address it is asked on. A worker that requires
    client certificates answers this probe, which presents none, 401: it answers."""
    try:
        response = httpx.get(f"{info.url}/healthz", timeout=HEALTH_TIMEOUT_S, verify=False)
    except httpx.HTTPError:
        return False
    return response.status_code == 200 or (info.scheme == "https" and response.status_code == 401)


def write_private(path: Path, text: str) -> None:
    """Write atomically, readable by this user only (the file may hold a token)."""
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    modes.write_file(temp, text.encode(), modes.PRIVATE_FILE)
    temp.replace(path)
