"""Feed events: their encoding and how a crowded directory collapses into one prefix event."""

import pytest

from worker.cluster.events import RESET, Batch, Event, Op, collapse


def test_a_batch_round_trips() -> None:
    batch = Batch(
        "w1",
        123,
        (Event(Op.CREATED, "s3://b/k", "etag"), Event(Op.DELETED, "s3://b/d", prefix=True)),
    )
    assert Batch.decode(batch.encode()) == batch


@pytest.mark.parametrize("raw", [b"", b"{}", b'{"w":"x","t":1,"e":[["?","p","",0]]}', b"[1]"])
def test_a_value_that_is_not_a_batch_is_refused(raw: bytes) -> None:
    with pytest.raises(ValueError, match="not a feed batch"):
        Batch.decode(raw)


def test_a_crowded_directory_becomes_one_prefix_event() -> None:
    table = [Event(Op.CREATED, f"s3://b/t/part-{i}", f"v{i}") for i in range(5)]
    other = Event(Op.UPDATED, "s3://b/x", "v")
    assert collapse([*table, other], threshold=4) == [
        Event(Op.UPDATED, "s3://b/t", prefix=True),
        other,
    ]
    assert collapse([*table, other], threshold=5) == [*table, other]


def test_a_reset_replaces_everything_and_duplicates_go() -> None:
    event = Event(Op.UPDATED, "s3://b/x", "v")
    assert collapse([event, event], threshold=10) == [event]
    assert collapse([event, RESET, event], threshold=10) == [RESET]
