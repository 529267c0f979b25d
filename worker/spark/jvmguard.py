"""A driver's JVM dies with its Python process, however that process ends.

pyspark starts the py4j gateway JVM as a child with a pipe on its standard input, and the JVM
exits through ``System.exit`` when the pipe breaks: its shutdown hooks run first, and one that
blocks keeps the whole driver alive, with its memory and ports and no process left to stop it
(``SparkContext.stop`` asking a standalone Master that went away, as when a lab's network goes
with a driver that died during its warm-up). A guard process holds a pipe from the driver of
its own: once the driver is gone (SIGKILL included: the kernel closes the pipe), it gives the
JVM :data:`GRACE_S` to exit by itself, then kills it. It leaves once the JVM is gone, and never
touches a process that merely took the JVM's PID (the start time tells them apart).

``python -m worker.spark.jvmguard <JVM pid> <its start time>``, from :func:`guard`.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import threading
import time

from worker.spark import procs

GRACE_S = 10.0
"""How long a JVM whose driver is gone may take to exit by itself before it is killed."""
_POLL_S = 1.0

_guards: dict[int, subprocess.Popen[bytes]] = {}
_lock = threading.Lock()


def guard(jvm_pid: int) -> None:
    """Tie the JVM ``jvm_pid`` (this process's py4j gateway) to this process: once it is gone,
    so is the JVM. Once per JVM; thread-safe (``_lock`` guards the guards kept: a guard whose
    pipe is collected would take this process for gone)."""
    started = procs.start_time(jvm_pid)
    if started is None:
        return
    with _lock:
        running = _guards.get(jvm_pid)
        if running is not None and running.poll() is None:
            return
        _guards[jvm_pid] = subprocess.Popen(
            [sys.executable, "-m", "worker.spark.jvmguard", str(jvm_pid), str(started)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            # Out of the driver's session: Ctrl-C or a hangup of the driver's terminal, which
            # the JVM ignores or outlives, must not end its guard.
            start_new_session=True,
        )


def _same(pid: int, started: int) -> bool:
    return procs.process_alive(pid) and procs.start_time(pid) == started


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
