"""A Spark driver killed during its warm-up leaves no JVM behind, even one whose own exit
blocks (issue 36 item 10)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from worker.spark import hadoopjar, jvmguard, procs

# A shutdown hook that blocks: what keeps a JVM up after its pipe from the driver broke when
# SparkContext.stop waits on a standalone Master that went away (a lab's network stopped).
HANG_ON_EXIT = """
public final class HangOnExit {
    public static void install() {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                Thread.sleep(600_000L);
            } catch (InterruptedException stopped) {
                Thread.currentThread().interrupt();
            }
        }));
    }
}
"""

DRIVER = """
import sys
from worker.spark.session import local_session

spark = local_session(1, "jvmguard-test", {"spark.driver.extraClassPath": sys.argv[1]}, False)
spark._jvm.HangOnExit.install()
print(spark.sparkContext._gateway.proc.pid, flush=True)
# The warm-up: a query that runs until the driver is killed.
spark.range(0, 10**13, numPartitions=1).selectExpr("sum(id * id)").collect()
"""


@pytest.fixture
def hang_on_exit(tmp_path: Path) -> Path:
    javac = hadoopjar.javac()
    assert javac is not None, "no javac: make installs it"
    source = tmp_path / "HangOnExit.java"
    source.write_text(HANG_ON_EXIT)
    classes = tmp_path / "classes"
    subprocess.run([javac, "-d", str(classes), str(source)], check=True)
    return classes


@pytest.fixture
def jvms() -> Iterator[list[int]]:
    """JVM PIDs a test saw; any still alive at the end is killed (by PID)."""
    seen: list[int] = []
    yield seen
    for pid in seen:
        if procs.process_alive(pid):
            procs.terminate(pid, timeout=1.0)


def test_a_driver_killed_during_warm_up_takes_its_jvm_with_it(
    hang_on_exit: Path, jvms: list[int]
) -> None:
    driver = subprocess.Popen(
        [sys.executable, "-c", DRIVER, str(hang_on_exit)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert driver.stdout is not None
        line = driver.stdout.readline()
        assert line.strip().isdigit(), "the driver did not start its session"
        jvm = int(line)
        jvms.append(jvm)
        assert procs.command_name(jvm) == "java"
        time.sleep(2)  # well into the warm-up's query
    finally:
        driver.send_signal(signal.SIGKILL)
        driver.wait()
    # The JVM's own exit is blocked by the hook: only its guard can end it.
    assert procs.wait_dead(jvm, timeout=60), "the dead driver's JVM is still running"


def test_a_guard_leaves_once_its_jvm_is_gone_and_never_hits_another_process() -> None:
    stand_in = subprocess.Popen(["sleep", "600"])  # a JVM stopped with its session
    try:
        jvmguard.guard(stand_in.pid)
        jvmguard.guard(stand_in.pid)  # once per JVM
        guards = procs.pids_with_args(jvmguard.__file__, str(stand_in.pid))
        assert len(guards) == 1
    finally:
        stand_in.kill()
        stand_in.wait()
    assert procs.wait_dead(guards[0], timeout=10), "the guard outlived its JVM"
