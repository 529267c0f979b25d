"""Linux process facts the sidecar needs, read from ``/proc``: liveness (a zombie counts as
dead), parents, command lines, start times, and stopping a process by PID."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

PROC = Path("/proc")
# Deep enough for any real launcher chain (JVM -> pyspark.daemon -> forked worker -> ...).
MAX_ANCESTORS = 32
OWNER_COMMANDS = frozenset({"java"})


def _stat_fields(pid: int) -> list[str] | None:
    """The fields of ``/proc/PID/stat`` after the command name, or None if PID is gone."""
    try:
        text = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    # The command name is in parentheses and may itself contain spaces or parentheses.
    return text[text.rfind(")") + 2 :].split()


def process_alive(pid: int) -> bool:
    """Whether PID names a running process. A zombie is dead: it has exited and only waits for
    its parent to reap it."""
    if pid <= 0:
        return False
    fields = _stat_fields(pid)
    if fields is None:
        if PROC.is_dir():
            return False
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    return fields[0] not in ("Z", "X")


def parent_pid(pid: int) -> int | None:
    fields = _stat_fields(pid)
    return int(fields[1]) if fields else None


def start_time(pid: int) -> int | None:
    """When PID started (clock ticks since boot): with the PID it names one process even
    after the PID is reused."""
    fields = _stat_fields(pid)
    # Field 22 of stat; fields[0] is field 3 (the state).
    return int(fields[19]) if fields else None


def command_name(pid: int) -> str | None:
    try:
        return (PROC / str(pid) / "comm").read_text().strip()
    except OSError:
        return None


def cmdline(pid: int) -> list[str]:
    """The arguments PID was started with ([] if it is gone or hidden)."""
    try:
        raw = (PROC / str(pid) / "cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode("utf-8", "replace") for part in raw.split(b"\0") if part]


def find_owner_pid() -> int:
    """The PID of the process that owns this one's sidecar: the nearest ancestor JVM (a Spark
    executor or driver, since PySpark's Python workers are its descendants), else our parent."""
    pid = os.getpid()
    for _ in range(MAX_ANCESTORS):
        parent = parent_pid(pid)
        if parent is None or parent <= 1:
            break
        if command_name(parent) in OWNER_COMMANDS:
            return parent
        pid = parent
    return os.getppid()


def pids_with_args(*needles: str) -> list[int]:
    """PIDs of live processes whose command line contains every one of ``needles`` as a whole
    argument, sorted."""
    found: list[int] = []
    for entry in PROC.iterdir() if PROC.is_dir() else ():
        if not entry.name.isdigit():
            continue
        args = cmdline(int(entry.name))
        if args and all(needle in args for needle in needles) and process_alive(int(entry.name)):
            found.append(int(entry.name))
    return sorted(found)


def wait_dead(pid: int, timeout: float) -> bool:
    """Poll until PID is dead or ``timeout`` seconds pass; whether it died."""
    deadline = time.monotonic() + timeout
    while process_alive(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


def terminate(pid: int, timeout: float) -> None:
    """Stop PID: SIGTERM (a graceful shutdown), then SIGKILL if it outlives ``timeout``."""
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 5.0)):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        if wait_dead(pid, wait):
            return
