"""The local SeaweedFS on small disks (real tmpfs mounts): every bucket takes writes whatever the
disk's free space was at start, and a disk too full for SeaweedFS is an error at start naming it,
not writes that time out one by one later."""

import subprocess
from pathlib import Path

import pytest

from tests.reliability.support import tmpfs
from worker.devlab.local.s3 import LocalS3

pytestmark = pytest.mark.integration


def test_every_bucket_takes_writes_on_a_small_disk(tmp_path: Path) -> None:
    # 128 MiB free: left to size itself, weed mini allows one 64 MiB volume, the
    # first bucket takes them all and the second never gets one.
    buckets = ("first", "second", "third", "fourth")
    with tmpfs(tmp_path / "disk", "128m") as disk, LocalS3(disk / "s3", buckets) as server:
        client = server.client()
        for bucket in buckets:
            client.pipe(f"{bucket}/key", bucket.encode() * 1000)
        assert [client.cat(f"{bucket}/key") for bucket in buckets] == [
            bucket.encode() * 1000 for bucket in buckets
        ]


def test_a_disk_too_full_for_seaweedfs_is_an_error_at_start(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "disk", "64m") as disk:
        subprocess.run(["fallocate", "-l", "65300k", str(disk / "filler")], check=True)
        server = LocalS3(disk / "s3")
        try:
            with pytest.raises(
                RuntimeError, match=r"less than about 1% free: .*/disk/s3 has 0 MiB"
            ):
                server.start()
            assert server.process is None
        finally:
            server.stop()  # by PID, should it have started after all
