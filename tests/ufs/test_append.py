"""An append to a local file pinned to the version its caller saw: a file changed meanwhile is
refused, not appended to (the S3 rewrite's own rules are in
``tests/integration/ufs/test_ufs_s3_append.py``; the contract suite covers the rest)."""

from pathlib import Path

import pytest

from ufs.deadline import Deadline, ThreadRunner
from ufs.errors import UfsVersionChanged
from ufs.local import LocalBackend


def test_a_file_changed_since_its_status_is_not_appended_to(tmp_path: Path) -> None:
    backend = LocalBackend(ThreadRunner(2))
    uri = f"file://{tmp_path}/log.txt"
    (tmp_path / "log.txt").write_bytes(b"one")
    seen = backend.status(uri, Deadline(10))
    (tmp_path / "log.txt").write_bytes(b"other")
    with pytest.raises(UfsVersionChanged):
        backend.append(seen, iter([b"two"]), Deadline(10))
    assert (tmp_path / "log.txt").read_bytes() == b"other"
    now = backend.status(uri, Deadline(10))
    assert backend.append(now, iter([b"+"]), Deadline(10)).size == 6
    assert (tmp_path / "log.txt").read_bytes() == b"other+"
