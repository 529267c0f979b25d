"""The digests of ``x-amz-checksum-*``: the catalogue check values of each CRC (the digest of
``123456789``), continued across pieces as a body streams, and botocore's own checksums."""

from __future__ import annotations

import base64

import pytest
from botocore.httpchecksum import CrtCrc32cChecksum, CrtCrc32Checksum, CrtCrc64NvmeChecksum

from worker.api.s3auth.checksums import CHECKSUMS, expected_checksum

CHECK = b"123456789"


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("x-amz-checksum-crc32", 0xCBF43926),
        ("x-amz-checksum-crc32c", 0xE3069283),
        ("x-amz-checksum-crc64nvme", 0xAE8B14860A799888),
    ],
)
def test_crc_check_values(name: str, value: int) -> None:
    digest = CHECKSUMS[name].new()
    digest.update(CHECK)
    assert digest.digest() == value.to_bytes(CHECKSUMS[name].size, "big")


@pytest.mark.parametrize(
    ("name", "botocore"),
    [
        ("x-amz-checksum-crc32", CrtCrc32Checksum),
        ("x-amz-checksum-crc32c", CrtCrc32cChecksum),
        ("x-amz-checksum-crc64nvme", CrtCrc64NvmeChecksum),
    ],
)
def test_pieces_continue_the_digest_as_botocore_computes_it(name: str, botocore: type) -> None:
    data = bytes(range(256)) * 1000
    theirs = botocore()
    theirs.update(data)
    ours = CHECKSUMS[name].new()
    for start in range(0, len(data), 777):
        ours.update(data[start : start + 777])
    assert base64.b64encode(ours.digest()).decode() == theirs.b64digest()
    assert expected_checksum(name, theirs.b64digest()).value == ours.digest()
