"""The consistent hash ring: pinned vectors (every process and host must agree), balance, and
minimal movement when a worker leaves."""

import hashlib
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from worker.common.ring import HashRing, ring_hash

WORKERS = ["10.0.0.1:28080", "10.0.0.2:28080", "10.0.0.3:28080"]

# Computed once and pinned: a change here means clients of two versions disagree on owners.
VECTORS = {
    "s3://bucket/a.parquet": "10.0.0.2:28080",
    "s3://bucket/b.parquet": "10.0.0.1:28080",
    "s3://bucket/data/part-00000.parquet": "10.0.0.2:28080",
    "s3://bucket/data/part-00001.parquet": "10.0.0.3:28080",
    "s3://bucket/data/part-00002.parquet": "10.0.0.1:28080",
    "file:///data/x.csv": "10.0.0.1:28080",
    "file:///data/y.csv": "10.0.0.1:28080",
    "s3://other/key": "10.0.0.1:28080",
    "s3a://bucket/a.parquet": "10.0.0.2:28080",
    "gs://g/h": "10.0.0.1:28080",
}


def test_ring_hash_is_the_first_8_bytes_of_sha256() -> None:
    assert ring_hash("s3://bucket/a.parquet") == 17821270667736193859
    digest = hashlib.sha256(b"gs://g/h").digest()
    assert ring_hash("gs://g/h") == int.from_bytes(digest[:8], "big")


@pytest.mark.parametrize(("uri", "owner"), sorted(VECTORS.items()))
def test_pinned_owners(uri: str, owner: str) -> None:
    assert HashRing(WORKERS, 100).owner(uri) == owner


def test_worker_order_given_does_not_matter() -> None:
    forward, backward = HashRing(WORKERS, 100), HashRing(list(reversed(WORKERS)), 100)
    for uri in VECTORS:
        assert forward.owners(uri) == backward.owners(uri)


def test_owners_lists_every_worker_once_owner_first() -> None:
    ring = HashRing(WORKERS, 100)
    assert ring.owners("s3://bucket/a.parquet") == [
        "10.0.0.2:28080",
        "10.0.0.3:28080",
        "10.0.0.1:28080",
    ]
    for uri in VECTORS:
        owners = ring.owners(uri)
        assert owners[0] == ring.owner(uri)
        assert sorted(owners) == sorted(WORKERS)


def test_spread_is_balanced() -> None:
    ring = HashRing(WORKERS, 200)
    counts = Counter(ring.owner(f"s3://bucket/data/part-{i:05d}.parquet") for i in range(30000))
    assert set(counts) == set(WORKERS)
    for worker in WORKERS:
        assert 0.8 < counts[worker] / 10000 < 1.2, counts


def test_removing_a_worker_only_moves_its_keys() -> None:
    before = HashRing(WORKERS, 100)
    after = HashRing(WORKERS[:2], 100)
    moved = 0
    for i in range(5000):
        uri = f"s3://bucket/k{i}"
        if before.owner(uri) == WORKERS[2]:
            moved += 1
            # Its keys go to the next worker on the ring: the client's failover target.
            assert after.owner(uri) == before.owners(uri)[1]
        else:
            assert after.owner(uri) == before.owner(uri)
    assert moved > 1000


@given(st.text(min_size=1, max_size=200))
def test_any_key_has_an_owner_among_the_workers(key: str) -> None:
    ring = HashRing(WORKERS, 10)
    assert ring.owner(key) in WORKERS
    assert ring.owners(key)[0] == ring.owner(key)


def test_bad_rings_are_refused() -> None:
    with pytest.raises(ValueError, match="at least one worker"):
        HashRing([], 10)
    with pytest.raises(ValueError, match="virtual_nodes"):
        HashRing(WORKERS, 0)


def test_duplicate_workers_count_once() -> None:
    assert HashRing([*WORKERS, WORKERS[0]], 10).workers == tuple(WORKERS)
