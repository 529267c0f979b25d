"""Feed events: their encoding and how a crowded directory collapses into one prefix event."""

import pytest

from worker.cluster.entries import BadEntry
from worker.cluster.events import RESET, Batch, Event, Op, collapse


def test_a_batch_round_trips() -> None:
    batch = Batch(
        "w1",
        123,
        (Event(Op.CREATED, "s3://b/k", "etag"), Event(Op.DELETED, "s3://b/d", prefix=True)),
    )
    assert Batch.decode(batch.encode()) == batch


def test_a_batch_carries_the_times_of_change_feed_events() -> None:
    origins = {"seaweedfs://f:18888/buckets": (1_700_000_000_123, 1_700_000_000_456)}
    batch = Batch("w1", 123, (Event(Op.CREATED, "s3://b/k", "etag"),), origins)
    assert Batch.decode(batch.encode()).origins == origins
    assert b'"o"' not in Batch("w1", 123, ()).encode()  # as before for a worker's own writes


FORGED_BATCHES = {
    "empty": b"",
    "no fields": b"{}",
    "unknown op": b'{"w":"x","t":1,"e":[["?","p","",0]]}',
    "not an object": b"[1]",
    "Infinity": b'{"w":"x","t":Infinity,"e":[]}',
    "NaN": b'{"w":"x","t":NaN,"e":[]}',
    "100k deep": b'{"w":"x","t":1,"e":' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    "float time": b'{"w":"x","t":1.5,"e":[]}',
    "bool prefix": b'{"w":"x","t":1,"e":[["u","s3://b/k","v",true]]}',
    "number path": b'{"w":"x","t":1,"e":[["u",7,"v",0]]}',
    "short event": b'{"w":"x","t":1,"e":[["u","s3://b/k"]]}',
    "event string": b'{"w":"x","t":1,"e":["uabc"]}',
    "5000 digits": b'{"w":"x","t":1' + b"0" * 5000 + b',"e":[]}',
    "not UTF-8": b'{"w":"\xff","t":1,"e":[]}',
    "too large": b'{"w":"x","t":1,"e":[],"pad":"' + b"x" * (3 << 20) + b'"}',
    "origins list": b'{"w":"x","t":1,"e":[],"o":[1]}',
    "origin time text": b'{"w":"x","t":1,"e":[],"o":{"s":["1"]}}',
    "negative origin": b'{"w":"x","t":1,"e":[],"o":{"s":[-1]}}',
}


@pytest.mark.parametrize("raw", FORGED_BATCHES.values(), ids=FORGED_BATCHES.keys())
def test_a_value_that_is_not_a_batch_is_one_error(raw: bytes) -> None:
    with pytest.raises(BadEntry, match="feed"):
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
