"""The per-host sidecar without Spark: one worker however many callers race to start it, reuse,
explicit stop, exit when its owners die, and clear errors when it cannot start."""

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from config import ConfigError
from tests.conftest import writable_by_others
from worker.spark import procs
from worker.spark.sidecar import (
    OWNERS_DIR,
    STATE_FILE,
    SidecarError,
    ensure_worker,
    ensure_worker_info,
    running_worker,
    stop_worker,
    worker_pids,
)

RACE_SCRIPT = """
import json, sys
from worker.spark.sidecar import ensure_worker_info
info = ensure_worker_info([sys.argv[1]], state_dir=sys.argv[2], owner_pid=int(sys.argv[3]))
print(json.dumps({"pid": info.pid, "port": info.port}))
"""


@pytest.fixture
def ufs(tmp_path: Path) -> Path:
    root = tmp_path / "ufs"
    root.mkdir()
    (root / "hello.txt").write_bytes(b"hello, cache\n")
    return root


@pytest.fixture
def state_dir(tmp_path: Path) -> Iterator[Path]:
    state = tmp_path / "state"
    yield state
    stop_worker(state)


def roots(ufs: Path) -> str:
    return f"dora.worker.ufs.roots=file://{ufs}"


def wait_until_dead(pid: int, seconds: float = 60.0) -> bool:
    """Bounded poll; the bound only keeps a broken build from hanging the suite."""
    deadline = time.monotonic() + seconds
    while procs.process_alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def test_concurrent_callers_in_several_processes_start_exactly_one_worker(
    ufs: Path, state_dir: Path
) -> None:
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", RACE_SCRIPT, roots(ufs), str(state_dir), str(os.getpid())],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(5)
    ]
    answers = []
    for racer in racers:
        out, err = racer.communicate(timeout=120)
        assert racer.returncode == 0, err
        answers.append(json.loads(out))
    assert len({(a["pid"], a["port"]) for a in answers}) == 1
    # Every process that raced has exited; the worker it started does not depend on them.
    assert worker_pids(state_dir) == [answers[0]["pid"]]


def test_concurrent_callers_in_one_process_start_exactly_one_worker(
    ufs: Path, state_dir: Path
) -> None:
    with ThreadPoolExecutor(4) as pool:
        infos = list(
            pool.map(
                lambda _: ensure_worker_info(
                    [roots(ufs)], state_dir=state_dir, owner_pid=os.getpid()
                ),
                range(4),
            )
        )
    assert len({info.pid for info in infos}) == 1
    assert worker_pids(state_dir) == [infos[0].pid]


def test_later_calls_reuse_the_worker_and_its_client_reads_through_it(
    ufs: Path, state_dir: Path
) -> None:
    first = ensure_worker_info([roots(ufs)], state_dir=state_dir, owner_pid=os.getpid())
    fs = ensure_worker([roots(ufs)], state_dir=state_dir, owner_pid=os.getpid())
    assert running_worker(state_dir) == first
    assert fs.cat_file(f"file://{ufs}/hello.txt") == b"hello, cache\n"
    assert worker_pids(state_dir) == [first.pid]


def test_the_worker_requires_the_token_it_was_started_with(ufs: Path, state_dir: Path) -> None:
    info = ensure_worker_info([roots(ufs)], state_dir=state_dir, owner_pid=os.getpid())
    url = f"http://{info.address}/v1/status"
    params = {"path": f"file://{ufs}/hello.txt"}
    assert httpx.get(url, params=params).status_code == 401
    assert info.token is not None
    authorized = httpx.get(url, params=params, headers={"Authorization": f"Bearer {info.token}"})
    assert authorized.status_code == 200
    # The token is not on the worker's command line, which every local user can read.
    assert not any(info.token in arg for arg in procs.cmdline(info.pid))


def test_stop_worker_stops_it(ufs: Path, state_dir: Path) -> None:
    info = ensure_worker_info([roots(ufs)], state_dir=state_dir, owner_pid=os.getpid())
    assert stop_worker(state_dir) is True
    assert not procs.process_alive(info.pid)
    assert not (state_dir / STATE_FILE).exists()
    assert running_worker(state_dir) is None
    assert stop_worker(state_dir) is False


def test_worker_exits_by_itself_once_its_owners_are_gone(ufs: Path, state_dir: Path) -> None:
    owner = subprocess.Popen(["sleep", "600"])
    try:
        info = ensure_worker_info([roots(ufs)], state_dir=state_dir, owner_pid=owner.pid)
        assert (state_dir / OWNERS_DIR / str(owner.pid)).exists()
        assert procs.process_alive(info.pid)
    finally:
        owner.kill()
        owner.wait()
    assert wait_until_dead(info.pid), "the worker outlived its only owner"
    assert not (state_dir / STATE_FILE).exists()


def test_a_killed_worker_is_replaced(ufs: Path, state_dir: Path) -> None:
    first = ensure_worker_info([roots(ufs)], state_dir=state_dir, owner_pid=os.getpid())
    os.kill(first.pid, signal.SIGKILL)
    assert wait_until_dead(first.pid)
    assert (state_dir / STATE_FILE).exists()  # stale: a killed worker cannot clean up
    second = ensure_worker_info([roots(ufs)], state_dir=state_dir, owner_pid=os.getpid())
    assert second.pid != first.pid
    assert running_worker(state_dir) == second


def test_a_worker_with_other_settings_is_not_silently_reused(
    ufs: Path, tmp_path: Path, state_dir: Path
) -> None:
    ensure_worker_info([roots(ufs)], state_dir=state_dir, owner_pid=os.getpid())
    with pytest.raises(SidecarError, match=r"dora\.worker\.ufs\.roots"):
        ensure_worker_info([roots(tmp_path)], state_dir=state_dir, owner_pid=os.getpid())


def test_a_worker_that_cannot_start_is_an_error_with_its_log(ufs: Path, state_dir: Path) -> None:
    bad = [roots(ufs), "dora.worker.page.store.sizes=lots"]
    with pytest.raises(SidecarError, match=r"dora\.worker\.page\.store\.sizes"):
        ensure_worker_info(bad, state_dir=state_dir, owner_pid=os.getpid(), start_timeout=60)
    assert worker_pids(state_dir) == []


def test_a_misspelled_setting_fails_in_the_caller(ufs: Path, state_dir: Path) -> None:
    with pytest.raises(ConfigError, match="did you mean"):
        ensure_worker_info(["dora.worker.ufs.root=file:///x"], state_dir=state_dir)
    assert worker_pids(state_dir) == []


def test_a_state_dir_others_can_write_is_refused(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(SidecarError, match="world-writable"):
        ensure_worker_info([], state_dir=shared)


def test_nothing_the_sidecar_and_its_worker_create_is_writable_by_others_under_umask_000(
    umask_000: None, ufs: Path, state_dir: Path
) -> None:
    """Issue 36 item 2: every file gets an explicit mode (the state dir's lock, owners and log
    files were 0666, and so was the metastore's rocksdict-config.json)."""
    (ufs / "large.bin").write_bytes(os.urandom(3 << 20))  # page files; hello.txt is packed
    fs = ensure_worker([roots(ufs)], state_dir=state_dir, owner_pid=os.getpid())
    assert fs.cat_file(f"file://{ufs}/hello.txt") == b"hello, cache\n"
    assert len(fs.cat_file(f"file://{ufs}/large.bin")) == 3 << 20
    fs.pipe_file(f"file://{ufs}/written.bin", b"through the worker")
    assert list(state_dir.rglob("*.pack")) and (state_dir / STATE_FILE).exists()
    assert writable_by_others(state_dir) == []
    assert stop_worker(state_dir)
    assert writable_by_others(state_dir) == []
