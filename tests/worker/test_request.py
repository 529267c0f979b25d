"""A request's context: its URI in canonical form and its freshness, decided once."""

import pytest

from tests.worker.test_pathconf import SYNC, conf
from ufs.errors import UfsInvalidPath
from worker.freshness import Source
from worker.request import Exchange, context, exchange


def test_the_uri_is_matched_in_its_canonical_form() -> None:
    config = conf(f"s3://lake/hot {SYNC}=0")
    call = context(config, "S3://lake/hot/a/", version="")
    assert (call.uri, call.fresh.source, call.version) == ("s3://lake/hot/a", Source.RULE, None)
    with pytest.raises(UfsInvalidPath):
        context(config, "no-scheme")


def test_an_unapplied_revision_of_the_exchange_re_checks_over_the_call() -> None:
    config = conf(f"s3://lake/cold {SYNC}=-1")
    call = context(config, "s3://lake/cold/a", -1, "v1", Exchange(must_sync=True))
    assert (call.fresh.sync_interval, call.fresh.source, call.version) == (0, Source.REVISION, "v1")


def test_the_bytes_a_call_serves_are_counted_in_its_exchange_only() -> None:
    config = conf()
    scope: dict[str, object] = {}
    mine, other = (
        context(config, "s3://lake/a", exchange=exchange(scope)),
        context(config, "s3://lake/a"),
    )
    mine.served("cache", 3)
    mine.served("cache", 4)
    other.served("ufs", 5)
    assert exchange(scope).served == {"cache": 7}
