"""A pytest plugin for a run of Ceph's s3-tests (``-p
tests.integration.s3endpoint.s3tests_plugin``): each test's new buckets come from a pool made
beforehand in the store, named by ``S3TESTS_BUCKETS`` (comma separated), instead of being
created through the endpoint under test, and the suite's clean-up between tests (which lists
object versions and deletes buckets) is left out: the pool is thrown away with the store after
the run.

So the store and the worker run the same tests on the same kind of bucket, and what is compared
is the object, listing and multipart operations, not bucket creation (a worker serves the
buckets its mount roots name)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import Any

import pytest

POOL_VARIABLE = "S3TESTS_BUCKETS"

# The operations issue 33 names: objects (get, head, put, copy, delete, ranges, conditions,
# metadata), listings (v1 and v2) and multipart uploads ...
SELECTED = re.compile(
    r"bucket_list|list_objects|object|multipart|ranged_request|put_obj|get_obj|delete_obj|copy"
    r"|atomic|multi_object|head"
)
# ... and not what none of them is: the features the endpoint answers 501 for, buckets' own
# settings and policies (the store's, not the cache's), and clients other than a signed one.
LEFT_OUT = re.compile(
    r"acl|policy|lock|version|tagging|encrypt|sse|lifecycle|logging|post_object|cors|public"
    r"|anon|restore|storage_class|website|select|torrent|bucket_create|bucket_recreate"
    r"|bucket_delete|ownership|_sts|iam|sns|append|account|tenant|request_payer|raw"
)
LEFT_OUT_MARKS = frozenset(
    {
        "versioning", "tagging", "encryption", "sse_s3", "object_lock", "bucket_policy",
        "lifecycle", "bucket_logging", "s3select", "s3website", "storage_class", "appendobject",
        "fails_on_rgw", "fails_on_aws", "cloud_transition", "cloud_restore", "iam_account",
        "iam_tenant", "test_of_sts", "webidentity_test", "sns", "object_ownership",
        "delete_marker",
    }
)  # fmt: skip


SLOW = frozenset(
    {
        "test_multi_object_delete_key_limit", "test_multi_objectv2_delete_key_limit",
        "test_multipart_get_part", "test_multipart_single_get_part",
        "test_multipart_upload_resend_part", "test_multipart_copy_multiple_sizes",
        "test_bucket_list_delimiter_not_skip_special", "test_object_checksum_sha256",
        "test_object_checksum_crc64nvme", "test_multipart_checksum_sha256",
        "test_get_multipart_checksum_object_attributes",
    }
)  # fmt: skip
"""Tests of more than 3 s each on SeaweedFS (a thousand keys, parts of many MiB): left out
unless ``S3TESTS_ALL`` is set, so a run takes minutes."""
ALL_VARIABLE = "S3TESTS_ALL"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Keep the selected tests only."""
    kept, dropped = [], []
    slow = frozenset() if os.environ.get(ALL_VARIABLE) else SLOW
    for item in items:
        marks = {mark.name for mark in item.iter_markers()}
        chosen = SELECTED.search(item.name) and not LEFT_OUT.search(item.name)
        chosen = chosen and item.name not in slow
        (kept if chosen and not marks & LEFT_OUT_MARKS else dropped).append(item)
    config.hook.pytest_deselected(items=dropped)
    items[:] = kept


def _pool() -> Iterator[str]:
    yield from os.environ[POOL_VARIABLE].split(",")
    raise RuntimeError(f"the bucket pool ({POOL_VARIABLE}) is used up: make it larger")


def pytest_collection_finish(session: pytest.Session) -> None:
    """Point the suite's bucket helpers at the pool, once its modules are imported."""
    del session
    from s3tests import functional
    from s3tests.functional import test_s3

    names = _pool()

    def new_name() -> str:
        return next(names)

    def new_bucket(client: Any = None, name: str | None = None) -> str:
        del client  # the pool's buckets exist already
        return new_name() if name is None else name

    def new_resource(name: str | None = None) -> Any:
        import boto3

        config = functional.config
        s3 = boto3.resource("s3", aws_access_key_id=config.main_access_key,
                            aws_secret_access_key=config.main_secret_key,
                            endpoint_url=config.default_endpoint, use_ssl=False)  # fmt: skip
        return s3.Bucket(new_name() if name is None else name)

    def no_clean_up(prefix: str, client: Any = None) -> None:
        del prefix, client

    for module in (functional, test_s3):
        module.get_new_bucket_name = new_name  # type: ignore[attr-defined]
        module.get_new_bucket = new_bucket  # type: ignore[attr-defined]
        module.get_new_bucket_resource = new_resource  # type: ignore[attr-defined]
    functional.nuke_prefixed_buckets = no_clean_up  # type: ignore[attr-defined]
