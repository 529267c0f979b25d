"""Ceph's s3-tests, the public S3 compatibility suite, as the peer: its object, listing and
multipart tests (``s3tests_plugin``'s selection) run against SeaweedFS and, at the same time,
against a worker's S3 endpoint over that SeaweedFS. Every test the store passes, the worker
passes, but those in :data:`DIFFERENCES` (each with its reason; the README's S3 section has
the table); and a difference that no longer is one must leave the list.

The suite is taken from a checkout named by ``S3TESTS_DIR`` (see
``tests/integration/s3endpoint/s3tests_support.py``); without one the test is skipped."""

from pathlib import Path

import pytest

from tests.integration.harness import WorkerProcess
from tests.integration.s3endpoint import s3tests_support as suite
from tests.integration.s3endpoint.s3_endpoint_support import KEY_ID, SECRET
from worker.devlab.local.s3 import ACCESS_KEY, SECRET_KEY, LocalS3, free_port

pytestmark = pytest.mark.integration

FOLDER = (
    "a key ending in '/' is a folder here (a directory where the store has them): "
    "its body must be empty"
)
REPEATED = (
    "a CompleteMultipartUpload of an upload already completed answers NoSuchUpload (S3 "
    "answers the object again): the worker's own multipart uploads keep nothing once done"
)
CHECKSUM = (
    "x-amz-checksum-* are checked on the way in, not stored with the object: PutObject and "
    "CreateMultipartUpload do not answer them, nor HeadObject with ChecksumMode"
)
DIFFERENCES = {
    "test_bucket_list_delimiter_prefix_ends_with_delimiter": FOLDER,
    "test_bucket_listv2_delimiter_prefix_ends_with_delimiter": FOLDER,
    "test_bucket_list_delimiter_not_skip_special": FOLDER,
    "test_bucket_list_return_data": "GetObjectAcl (ACLs are not among the endpoint's operations)",
    "test_put_object_ifmatch_failed": "a conditional PutObject (If-Match, If-None-Match) is "
    "refused (501): the store's write is not made conditional",
    "test_multipart_upload": REPEATED,
    "test_multipart_upload_small": REPEATED,
    "test_multipart_resend_first_finishes_last": "a CompleteMultipartUpload naming a part "
    "number twice is refused, as S3 refuses it (SeaweedFS takes the last)",
    "test_object_checksum_sha256": CHECKSUM,
    "test_object_checksum_crc64nvme": CHECKSUM,
    "test_multipart_reupload_checksum_and_etag": CHECKSUM,
    "test_get_object_attributes": "GetObjectAttributes (not among the endpoint's operations)",
    "test_get_multipart_object_attributes": "GetObjectAttributes",
    "test_get_paginated_multipart_object_attributes": "GetObjectAttributes",
    "test_get_single_multipart_object_attributes": "GetObjectAttributes",
    "test_put_current_object_if_none_match": "PutBucketVersioning (versions are not served)",
    "test_multipart_put_current_object_if_none_match": "PutBucketVersioning",
}
"""Tests SeaweedFS passes and the worker does not, and why."""


@pytest.mark.timeout(1200)
def test_worker_passes_what_the_store_passes(tmp_path: Path) -> None:
    checkout = suite.suite_dir()
    if checkout is None:
        pytest.skip(f"no s3-tests checkout: set {suite.DIR_VARIABLE} to one")
    with LocalS3(tmp_path / "store") as store:
        store_pool = suite.make_pool(store, "a")
        worker_pool = suite.make_pool(store, "b")
        port = free_port()
        roots = ",".join(f"s3://{name}" for name in worker_pool)
        (tmp_path / "worker").mkdir()
        worker = WorkerProcess(tmp_path / "worker", f"dora.worker.ufs.roots={roots}",
                               *store.storage_defines(), f"dora.worker.s3.port={port}",
                               f"dora.worker.s3.access.key.id={KEY_ID}",
                               f"dora.worker.s3.secret.access.key={SECRET}")  # fmt: skip
        try:
            store_port = store.ports["s3.port"]
            store_conf = suite.configuration(tmp_path / "store.conf", store.host, store_port,
                                             ACCESS_KEY, SECRET_KEY)  # fmt: skip
            worker_conf = suite.configuration(tmp_path / "worker.conf", "127.0.0.1", port,
                                              KEY_ID, SECRET)  # fmt: skip
            runs = [
                suite.start(checkout, store_conf, store_pool, tmp_path / "store.xml"),
                suite.start(checkout, worker_conf, worker_pool, tmp_path / "worker.xml"),
            ]
            try:
                for run in runs:
                    run.wait(timeout=1000)
            finally:
                for run in runs:
                    run.kill()  # a run still going when this test gives up stops with it
                    run.wait()
        finally:
            worker.stop()
    on_store = suite.outcomes(tmp_path / "store.xml")
    on_worker = suite.outcomes(tmp_path / "worker.xml")
    passed = {name for name, outcome in on_store.items() if outcome == "passed"}
    assert len(passed) > 100, (tmp_path / "store.log").read_text()[-3000:]
    failed = {name for name in passed if on_worker.get(name) != "passed"}
    assert failed - DIFFERENCES.keys() == set(), (tmp_path / "worker.log").read_text()[-5000:]
    assert {name for name in DIFFERENCES if on_worker.get(name) == "passed"} == set()
    log = (tmp_path / "worker" / "worker.log").read_text()
    assert "Traceback" not in log, log
