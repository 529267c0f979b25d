"""Starting a worker process for a state directory: its command line and environment, a
detached launch, and the wait until it listens."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import subprocess
import sys
import time
from pathlib import Path

from config.core_keys import WORK_DIR
from worker import keys as worker_keys
from worker.keys import build_registry
from worker.spark import procs
from worker.spark.state import (
    LAUNCH_FILE,
    LOG_FILE,
    OWNERS_DIR,
    STATE_FILE,
    WORK_SUBDIR,
    RunningWorker,
    SidecarError,
    answers,
    read_state,
    write_private,
)

LOG_TAIL_LINES = 20
# A launcher that starts the worker in its own session and exits at once, so the worker is
# nobody's child: no zombie is left behind in a Spark Python worker, and Spark killing that
# Python worker (idle after ~60 s) cannot take the cache down with it.
# The log is the worker's user's only (the umask may be 000).
_LAUNCHER = (
    "import os, subprocess, sys\n"
    "log = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)\n"
    "os.fchmod(log, 0o600)\n"
    "child = subprocess.Popen(sys.argv[3:], cwd=sys.argv[2], stdin=subprocess.DEVNULL,"
    " stdout=log, stderr=subprocess.STDOUT, start_new_session=True)\n"
    "print(child.pid)\n"
)


def fingerprints(settings: dict[str, str]) -> dict[str, str]:
    """{key: short hash of its value}: hashes, not values, since launch.json must not hold
    secrets."""
    return {k: hashlib.sha256(v.encode()).hexdigest()[:16] for k, v in sorted(settings.items())}


def _worker_command(
    root: Path, settings: dict[str, str], token: str
) -> tuple[list[str], dict[str, str]]:
    """The worker's command line and environment. Secrets travel in the environment, readable
    only by this user, since every user on the host can read a command line."""
    registry = build_registry()
    env = dict(os.environ)
    args = [
        sys.executable,
        "-m",
        "worker.cli.main",
        "worker",
        "start",
        "--state-file",
        str(root / STATE_FILE),
        "--owners-dir",
        str(root / OWNERS_DIR),
        f"-D{worker_keys.BIND_HOST.name}=127.0.0.1",
        f"-D{worker_keys.BIND_PORT.name}=0",
        f"-D{WORK_DIR.name}={root / WORK_SUBDIR}",
    ]
    env[worker_keys.TOKEN.env_name] = token
    for name, value in settings.items():
        key = registry.lookup(name)
        if key.secret:
            env[key.env_name] = value
        else:
            args.append(f"-D{name}={value}")
    return args, env


def start_worker(root: Path, settings: dict[str, str], timeout: float) -> RunningWorker:
    """Launch a detached worker for ``root`` and wait until it answers; the caller holds the
    state dir's lock. Raises SidecarError (with the end of the worker's log) if it exits or
    does not answer within ``timeout`` seconds."""
    token = settings.get(worker_keys.TOKEN.name) or secrets.token_urlsafe(24)
    args, env = _worker_command(root, settings, token)
    # Written before the launch so that the state read while waiting carries the token.
    write_private(
        root / LAUNCH_FILE, json.dumps({"settings": fingerprints(settings), "token": token})
    )
    log = root / LOG_FILE
    with contextlib.suppress(OSError):
        log.replace(root / (LOG_FILE + ".1"))
    launched = subprocess.run(
        [sys.executable, "-c", _LAUNCHER, str(log), str(root), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if launched.returncode != 0 or not launched.stdout.strip().isdigit():
        (root / LAUNCH_FILE).unlink(missing_ok=True)
        raise SidecarError(f"could not launch the worker: {launched.stderr.strip()[-2000:]}")
    try:
        return _wait_ready(root, int(launched.stdout.strip()), timeout)
    except SidecarError:
        (root / LAUNCH_FILE).unlink(missing_ok=True)
        raise


def _wait_ready(root: Path, pid: int, timeout: float) -> RunningWorker:
    deadline = time.monotonic() + timeout
    delay = 0.02
    while True:
        info = read_state(root)
        if info is not None and info.pid == pid and answers(info):
            return info
        if not procs.process_alive(pid):
            raise SidecarError(f"the worker exited while starting; {_log_tail(root)}")
        if time.monotonic() >= deadline:
            procs.terminate(pid, timeout=10.0)
            raise SidecarError(f"the worker did not start within {timeout:g}s; {_log_tail(root)}")
        time.sleep(delay)
        delay = min(delay * 2, 0.25)


def _log_tail(root: Path) -> str:
    path = root / LOG_FILE
    try:
        lines = path.read_text(errors="replace").splitlines()[-LOG_TAIL_LINES:]
    except OSError:
        return f"no log at {path}"
    return f"last lines of {path}:\n" + "\n".join(lines)
