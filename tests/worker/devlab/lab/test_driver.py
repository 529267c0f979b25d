"""The lab demo's Spark driver process (``worker.devlab.demo.hosts.Driver``) when waiting for its
warm-up fails: neither the driver nor its JVM is left running (issue 36 item 10).

The driver runs on this host rather than in a lab namespace (the host only says where and how
to run it), with a real Spark session whose warm-up waits for executors that never come."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

import pytest

from worker.devlab.demo.hosts import Driver
from worker.spark import jvmguard, procs


@dataclass(frozen=True)
class Here:
    """A host that is this one: what the driver needs of a lab host."""

    address: str = "127.0.0.1"

    def command(self, argv: Sequence[str], cwd: Path | None = None) -> list[str]:
        return list(argv)


@dataclass
class Network:
    hosts: dict[str, Here]


@dataclass
class HereLab:
    root: Path
    network: Network


@dataclass(frozen=True)
class LocalMaster:
    url: str = "local[1]"  # one executor: the warm-up waits for three


def children(pid: int, *needles: str, command: str | None = None) -> list[int]:
    """Live children of ``pid`` whose command line holds ``needles`` (and named ``command``)."""
    found = procs.pids_with_args(*needles) if needles else _all_pids()
    return [
        child
        for child in found
        if procs.parent_pid(child) == pid
        and (command is None or procs.command_name(child) == command)
        and procs.process_alive(child)
    ]


def _all_pids() -> list[int]:
    return [int(entry.name) for entry in Path("/proc").iterdir() if entry.name.isdigit()]


@pytest.fixture
def left() -> Iterator[list[int]]:
    """PIDs a test saw; whatever is still alive at its end is stopped (by PID)."""
    seen: list[int] = []
    yield seen
    for pid in seen:
        if procs.process_alive(pid):
            procs.terminate(pid, timeout=1.0)


def interrupt_once_warming_up(seen: list[int], failed: list[str]) -> None:
    """Wait for the driver (our child) to have a JVM and that JVM's guard (so its session is
    up and the warm-up runs), then interrupt the main thread's wait for the driver."""
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        for driver in children(os.getpid(), "-m", "worker.devlab.lab.sparkjob"):
            jvms = children(driver, command="java")
            if jvms and children(driver, jvmguard.__file__):
                seen.extend([driver, *jvms])
                os.kill(os.getpid(), signal.SIGALRM)
                return
        time.sleep(0.2)
    failed.append("the driver's session did not start")
    os.kill(os.getpid(), signal.SIGALRM)


def test_a_driver_whose_warm_up_is_interrupted_is_stopped_with_its_jvm(
    tmp_path: Path, left: list[int]
) -> None:
    (tmp_path / "logs").mkdir()
    lab = HereLab(tmp_path, Network({"w1": Here()}))

    def interrupted(_sig: int, _frame: FrameType | None) -> None:
        raise TimeoutError("the warm-up took too long")

    failed: list[str] = []
    previous = signal.signal(signal.SIGALRM, interrupted)
    watcher = threading.Thread(target=interrupt_once_warming_up, args=(left, failed))
    watcher.start()
    try:
        with pytest.raises(TimeoutError):
            Driver(lab, "w1", LocalMaster(), 3, tmp_path / "sample.parquet")  # type: ignore[arg-type]
    finally:
        watcher.join()
        signal.signal(signal.SIGALRM, previous)
    assert not failed, (tmp_path / "logs" / "driver.log").read_text()[-3000:]
    driver, *jvms = left
    assert procs.wait_dead(driver, timeout=10), "the driver is still running"
    for jvm in jvms:
        assert procs.wait_dead(jvm, timeout=60), "the driver's JVM is still running"
