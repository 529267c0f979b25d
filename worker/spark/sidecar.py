"""One cache worker per host, started on demand by whoever needs it first (a Spark executor's
Python task, a driver, a script): the sidecar outside Kubernetes.

Everything lives in a state directory (``$DORA_STATE_DIR``, else ``/tmp/doracache-<uid>``):

- ``lock``: an ``fcntl`` lock; whoever holds it may check, start or stop the worker, so
  concurrent callers on the host start exactly one;
- ``worker.json``: written by the worker itself (``--state-file``) once it listens: pid, host,
  port, token; removed when it exits;
- ``owners/<pid>``: the processes the worker serves (``--owners-dir``); it exits by itself once
  none of them is alive, so it outlives Spark's short-lived Python workers but not the executor;
- ``launch.json``: the settings the worker was started with, to refuse silently serving a
  caller that asked for different ones;
- ``worker.log`` and ``work/`` (the default ``dora.work.dir``: metastore and pages).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from config.loader import parse_define
from pagestore import modes
from worker.keys import build_registry
from worker.spark import procs
from worker.spark.launch import fingerprints, start_worker
from worker.spark.state import (
    LAUNCH_FILE,
    LOCK_FILE,
    OWNERS_DIR,
    STATE_FILE,
    RunningWorker,
    SidecarError,
    answers,
    is_ours,
    read_launch,
    read_state,
)

if TYPE_CHECKING:
    from worker.client.filesystem import DoraFileSystem

__all__ = [
    "OWNERS_DIR",
    "STATE_FILE",
    "RunningWorker",
    "SidecarError",
    "connect",
    "default_state_dir",
    "ensure_worker",
    "ensure_worker_info",
    "running_worker",
    "stop_worker",
    "worker_pids",
]


def default_state_dir() -> Path:
    """``$DORA_STATE_DIR``, else ``<tmp>/doracache-<uid>`` (one per user and host)."""
    configured = os.environ.get("DORA_STATE_DIR")
    if configured:
        return Path(configured)
    return Path(tempfile.gettempdir()) / f"doracache-{os.getuid()}"


def ensure_worker(
    defines: Sequence[str] = (),
    *,
    state_dir: str | os.PathLike[str] | None = None,
    owner_pid: int | None = None,
    sync_interval: str | int | None = None,
    start_timeout: float = 60.0,
) -> DoraFileSystem:
    """Make sure this host's worker runs and return a client bound to it.

    ``defines`` are the worker's ``key=value`` settings (mount roots, UFS endpoint and
    credentials, page store size, ...); they apply when this call starts the worker, and a
    running worker started with different ones is an error rather than silently reused.
    ``owner_pid`` (default: the nearest ancestor JVM, else the parent process) is registered as
    a process the worker serves. Safe to call concurrently from any number of threads and
    processes: exactly one worker is started. Raises SidecarError or ConfigError.
    """
    info = ensure_worker_info(
        defines, state_dir=state_dir, owner_pid=owner_pid, start_timeout=start_timeout
    )
    return connect(info, sync_interval=sync_interval)


def ensure_worker_info(
    defines: Sequence[str] = (),
    *,
    state_dir: str | os.PathLike[str] | None = None,
    owner_pid: int | None = None,
    start_timeout: float = 60.0,
) -> RunningWorker:
    """:func:`ensure_worker` without the client: the running worker's state."""
    settings = normalize_defines(defines)
    root = _prepare_dir(_root(state_dir))
    with _locked(root):
        _register_owner(root, owner_pid if owner_pid is not None else procs.find_owner_pid())
        info = _healthy_worker(root)
        if info is not None:
            _check_same_settings(root, settings)
            return info
        return start_worker(root, settings, start_timeout)


def connect(info: RunningWorker, sync_interval: str | int | None = None) -> DoraFileSystem:
    """A client for the worker ``info`` describes."""
    from worker.client.filesystem import DoraFileSystem

    return DoraFileSystem(
        workers=[info.url], token=info.token, sync_interval=sync_interval, fallback_to_ufs=False
    )


def running_worker(state_dir: str | os.PathLike[str] | None = None) -> RunningWorker | None:
    """The healthy worker of ``state_dir``, or None; starts nothing."""
    root = _root(state_dir)
    info = read_state(root)
    if info is None or not is_ours(root, info.pid) or not answers(info):
        return None
    return info


def worker_pids(state_dir: str | os.PathLike[str] | None = None) -> list[int]:
    """PIDs of every live worker process started for ``state_dir`` (normally zero or one)."""
    root = _root(state_dir)
    return procs.pids_with_args("--state-file", str(root / STATE_FILE))


def stop_worker(state_dir: str | os.PathLike[str] | None = None, timeout: float = 20.0) -> bool:
    """Stop the worker of ``state_dir`` (graceful, then forced after ``timeout`` seconds) and
    forget its owners. Whether there was one to stop."""
    root = _root(state_dir)
    if not root.is_dir():
        return False
    with _locked(root):
        pids = worker_pids(root)
        for pid in pids:
            procs.terminate(pid, timeout)
        for path in (root / STATE_FILE, root / LAUNCH_FILE, *(root / OWNERS_DIR).glob("*")):
            path.unlink(missing_ok=True)
        return bool(pids)


def _root(state_dir: str | os.PathLike[str] | None) -> Path:
    # Absolute, because the path is matched against worker command lines.
    return (Path(state_dir) if state_dir is not None else default_state_dir()).absolute()


def normalize_defines(defines: Sequence[str]) -> dict[str, str]:
    """``key=value`` strings as {canonical key: value}, checked against the registry so that a
    misspelled key fails here, in the caller, rather than in a detached worker."""
    registry = build_registry()
    settings: dict[str, str] = {}
    for define in defines:
        spelling, value = parse_define(define.removeprefix("-D"))
        settings[registry.lookup(spelling, "worker setting").name] = value
    return settings


def _prepare_dir(root: Path) -> Path:
    modes.make_dirs(root, modes.PRIVATE_DIR)
    info = root.stat()
    # The state dir holds the worker's token: refuse one another user could have planted.
    if info.st_uid != os.getuid() or info.st_mode & 0o022:
        raise SidecarError(
            f"state dir {root} must belong to uid {os.getuid()} and not be group- or "
            "world-writable; set DORA_STATE_DIR to a private directory"
        )
    modes.make_dir(root / OWNERS_DIR, modes.PRIVATE_DIR)
    return root


@contextlib.contextmanager
def _locked(root: Path) -> Iterator[None]:
    # flock locks belong to an open file description: threads of one process that each open
    # the file exclude one another just as processes do.
    fd = modes.create(root / LOCK_FILE, os.O_RDONLY | os.O_CLOEXEC, modes.PRIVATE_FILE)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # which drops the lock


def _register_owner(root: Path, pid: int) -> None:
    owners = root / OWNERS_DIR
    started = procs.start_time(pid)
    modes.write_file(owners / str(pid), f"{started or ''}\n".encode(), modes.PRIVATE_FILE)
    for entry in owners.iterdir():
        # A PID whose start time changed was reused by an unrelated process: not an owner.
        if not entry.name.isdigit():
            continue
        recorded = entry.read_text().strip()
        alive = procs.process_alive(int(entry.name))
        if not alive or (recorded and recorded != str(procs.start_time(int(entry.name)))):
            entry.unlink(missing_ok=True)


def _healthy_worker(root: Path) -> RunningWorker | None:
    """The state dir's worker if it answers; a stale or hung one is cleared away."""
    info = read_state(root)
    if info is not None and is_ours(root, info.pid) and answers(info):
        return info
    for pid in worker_pids(root):
        # Alive but silent (hung, or on its way out): it must go before a new one can open the
        # same metastore.
        procs.terminate(pid, timeout=10.0)
    (root / STATE_FILE).unlink(missing_ok=True)
    return None


def _check_same_settings(root: Path, settings: dict[str, str]) -> None:
    launched: dict[str, str] | None = read_launch(root).get("settings")
    if launched is None:
        return
    wanted = fingerprints(settings)
    differing = sorted(k for k in set(launched) | set(wanted) if launched.get(k) != wanted.get(k))
    if differing:
        raise SidecarError(
            f"the worker running for {root} was started with other values of "
            f"{', '.join(differing)}; stop it (stop_worker) or use another state dir"
        )
