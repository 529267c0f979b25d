"""A driver's JVM dies with its Python process, however that process ends.

pyspark starts the py4j gateway JVM as a child with a pipe on its standard input, and the JVM
exits through ``System.exit`` when the pipe breaks: its shutdown hooks run first, and one that
blocks keeps the whole driver alive, with its memory and ports and no process left to stop it
(``SparkContext.stop`` asking a standalone Master that went away, as when a lab's network goes
with a driver that died during its warm-up). A guard process holds a pipe from the driver of
its own: once the driver is gone (SIGKILL included: the kernel closes the pipe), it gives the
JVM :data:`GRACE_S` to exit by itself, then kills it. It leaves once the JVM is gone, and never
touches a process that merely took the JVM's PID (the start time tells them apart).

:func:`guard` runs this file as a script of its own (``python -I jvmguard.py <JVM pid> <its
start time>``): it imports nothing of the package, so an idle guard costs a bare interpreter.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

GRACE_S = 10.0
"""How long a JVM whose driver is gone may take to exit by itself before it is killed."""
_POLL_S = 1.0

_guards: dict[int, subprocess.Popen[bytes]] = {}
_lock = threading.Lock()


def guard(jvm_pid: int) -> None:
    """Tie the JVM ``jvm_pid`` (this process's py4j gateway) to this process: once it is gone,
    so is the JVM. Once per JVM; thread-safe (``_lock`` guards the guards kept: a guard whose
    pipe is collected would take this process for gone)."""
    started = _start_time(jvm_pid)
    if started is None:
        return
    with _lock:
        running = _guards.get(jvm_pid)
        if running is not None and running.poll() is None:
            return
        _guards[jvm_pid] = subprocess.Popen(
            [sys.executable, "-I", __file__, str(jvm_pid), str(started)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            # Out of the driver's session: Ctrl-C or a hangup of the driver's terminal, which
            # the JVM ignores or outlives, must not end its guard.
            start_new_session=True,
        )


def _start_time(pid: int) -> int | None:
    """When ``pid`` started (clock ticks since boot), None once it is gone or a zombie; as
    ``worker.spark.procs`` reads it, without importing the package."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rfind(")") + 2 :].split()  # after the command name, which may hold ")"
    return None if fields[0] in ("Z", "X") else int(fields[19])


def _same(pid: int, started: int) -> bool:
    return _start_time(pid) == started


def watch(pid: int, started: int, grace_s: float = GRACE_S) -> None:
    """Wait for standard input to end (the driver is gone) while the JVM lives; then give it
    ``grace_s`` to exit, and kill it."""
    while _same(pid, started):
        readable, _, _ = select.select([sys.stdin.fileno()], [], [], _POLL_S)
        if readable and not os.read(sys.stdin.fileno(), 4096):
            break
    else:
        return  # the JVM ended first: stopped with its session
    deadline = time.monotonic() + grace_s
    while _same(pid, started):
        if time.monotonic() >= deadline:
            print(f"jvmguard: the driver is gone and JVM {pid} did not exit: killing it",
                  file=sys.stderr)  # fmt: skip
            os.kill(pid, signal.SIGKILL)
            return
        time.sleep(0.1)


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    watch(int(argv[0]), int(argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
