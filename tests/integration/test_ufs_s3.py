"""The UFS contract against a real S3 server (SeaweedFS)."""

import pytest
import s3fs

from tests.ufs.contract import UfsContract, WriteOutside
from ufs.adapter import Ufs
from ufs.errors import UfsNotFound


class TestSeaweedFS(UfsContract):
    @pytest.fixture
    def ufs(self, s3_ufs: Ufs) -> Ufs:
        return s3_ufs

    @pytest.fixture
    def root(self, s3_root: str) -> str:
        return s3_root

    @pytest.fixture
    def write_outside(self, s3_raw: s3fs.S3FileSystem) -> WriteOutside:
        def write(uri: str, data: bytes) -> None:
            s3_raw.pipe_file(uri.removeprefix("s3://"), data)

        return write


def test_version_is_the_etag(s3_ufs: Ufs, s3_root: str) -> None:
    status = s3_ufs.write(f"{s3_root}/e", b"hello")
    assert status.version == "5d41402abc4b2a76b9719d911017c592"  # md5("hello")
    assert status.content_hash == status.version


def test_missing_bucket_is_not_found(s3_ufs: Ufs) -> None:
    with pytest.raises(UfsNotFound):
        s3_ufs.status("s3://no-such-bucket-here/k")
