"""A request's context: its URI in canonical form and its freshness, decided once."""

import pytest

from tests.worker.rules.support import READ, SYNC, conf
from ufs.errors import UfsInvalidPath
from worker.freshness import IntervalSource
from worker.request import Exchange, context, exchange
from worker.rules.live import Rules
from worker.rules.model import Admission


def test_the_uri_is_matched_in_its_canonical_form() -> None:
    rules = Rules.from_config(conf(f"s3://lake/hot {SYNC}=0", f"s3://lake/hot {READ}=NO_CACHE"))
    call = context(rules, "S3://lake/hot/a/", version="")
    assert (call.uri, call.fresh.source, call.version) == (
        "s3://lake/hot/a",
        IntervalSource.RULE,
        None,
    )
    assert call.policy.admission is Admission.PASS  # the rules resolved once, into the context
    with pytest.raises(UfsInvalidPath):
        context(rules, "no-scheme")


def test_an_unapplied_revision_of_the_exchange_re_checks_over_the_call() -> None:
    rules = Rules.from_config(conf(f"s3://lake/cold {SYNC}=-1"))
    call = context(rules, "s3://lake/cold/a", -1, "v1", Exchange(must_sync=True))
    assert (call.fresh.sync_interval, call.fresh.source, call.version) == (
        0,
        IntervalSource.REVISION,
        "v1",
    )


def test_the_bytes_a_call_serves_are_counted_in_its_exchange_only() -> None:
    rules = Rules.from_config(conf())
    scope: dict[str, object] = {}
    mine, other = (
        context(rules, "s3://lake/a", exchange=exchange(scope)),
        context(rules, "s3://lake/a"),
    )
    mine.served("cache", 3)
    mine.served("cache", 4)
    other.served("ufs", 5)
    assert exchange(scope).served == {"cache": 7}
