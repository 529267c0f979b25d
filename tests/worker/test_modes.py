"""What the cache creates on disk has the modes of ``pagestore.modes`` whatever the umask: under
umask 000 a page directory writable by anyone would let any local user plant a page that the
worker and its short-circuit clients serve."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

from pagestore import modes
from tests.conftest import writable_by_others
from tests.worker.conftest import Api
from worker.service import WorkerService


def too_open(top: Path) -> list[str]:
    """Entries under ``top`` that another user may reach: anything writable by group or
    others, anything readable by others, anything group-readable outside the page store's
    shared modes. Entries under a private directory are reachable by no one else."""
    found = []
    for dirpath, dirnames, filenames in os.walk(top):
        mode = stat.S_IMODE(os.stat(dirpath).st_mode)
        if mode not in (modes.SHARED_DIR, modes.PRIVATE_DIR):
            found.append(f"{dirpath} {mode:o}")
        if mode == modes.PRIVATE_DIR:
            dirnames.clear()
            continue
        for name in filenames:
            path = os.path.join(dirpath, name)
            file_mode = stat.S_IMODE(os.lstat(path).st_mode)
            if file_mode not in (modes.SHARED_FILE, modes.PRIVATE_FILE):
                found.append(f"{path} {file_mode:o}")
    return found


def test_every_directory_and_file_the_worker_creates_under_umask_000(
    umask_000: None, make_service: Callable[..., WorkerService], data_dir: Path, tmp_path: Path
) -> None:
    (data_dir / "small").write_bytes(b"x" * 100)  # packed
    (data_dir / "large").write_bytes(b"y" * (200 << 10))  # page files
    service = make_service("dora.worker.page.store.page.size=64KB")
    api = Api(service)
    try:
        for name in ("small", "large"):
            assert api.get("/v1/read", params={"path": f"file://{data_dir}/{name}"}).is_success
        assert api.get("/v1/local").is_success  # the generation file
    finally:
        api.close()
    service.close()
    work = tmp_path / "work"
    assert too_open(work) == []
    # Issue 36 item 2: inside the private metastore, rocksdict's own rocksdict-config.json
    # was 0666.
    assert writable_by_others(work) == []
    assert stat.S_IMODE(os.stat(work / "metastore").st_mode) == modes.PRIVATE_DIR
