"""Publisher and follower against a real etcd: order, batching, own events, catch-up from a
saved position, compaction, outages."""

import json
import threading
import time
from collections.abc import Iterator

import pytest

from worker.cluster import layout
from worker.cluster.etcd import Etcd, WatchStream
from worker.cluster.events import Batch, Event, Op, Origin
from worker.cluster.follower import Follower
from worker.cluster.publisher import Publisher, PublisherOptions
from worker.devlab.local.etcd import LocalEtcd

from .support import MemoryMarkers, RecordingSink, wait_for


def publisher(etcd: Etcd, cluster: str, worker: str, limit: int = 1000) -> Publisher:
    options = PublisherOptions(worker, layout.feed_key(cluster), 64, limit)
    pub = Publisher(etcd, options)
    pub.start()
    return pub


def follower(
    etcd: Etcd, cluster: str, worker: str, sink: RecordingSink, markers: MemoryMarkers
) -> Follower:
    feed = Follower(etcd, layout.feed_key(cluster), worker, sink, markers, idle_timeout_s=5)
    feed.start()
    return feed


@pytest.fixture
def closing() -> Iterator[list[Publisher | Follower]]:
    parts: list[Publisher | Follower] = []
    yield parts
    for part in parts:
        if isinstance(part, Publisher):
            part.close(1)
        else:
            part.close()


def event(i: int) -> Event:
    return Event(Op.UPDATED, f"s3://b/d{i % 3}/f{i}", f"v{i}")


def test_events_arrive_in_order_and_own_events_are_skipped(
    etcd: Etcd, cluster: str, closing: list[Publisher | Follower]
) -> None:
    sink_b, markers_b = RecordingSink(), MemoryMarkers()
    feed_b = follower(etcd, cluster, "B", sink_b, markers_b)
    feed_a_sink = RecordingSink()
    feed_a = follower(etcd, cluster, "A", feed_a_sink, MemoryMarkers())
    pub = publisher(etcd, cluster, "A")
    closing += [pub, feed_a, feed_b]
    wait_for(lambda: feed_b.connected and feed_a.connected)
    revisions = [pub.publish([event(i)], wait_s=5) for i in range(20)]
    assert all(r is not None for r in revisions)
    assert revisions == sorted(revisions)  # type: ignore[type-var]
    last = revisions[-1]
    assert last is not None
    assert feed_b.wait_applied(last, timeout_s=10)
    assert sink_b.events == [event(i) for i in range(20)]
    assert feed_a.wait_applied(last, timeout_s=10)
    assert feed_a_sink.events == []
    assert feed_b.events_applied == 20


def test_change_feed_times_travel_with_their_events(
    etcd: Etcd, cluster: str, closing: list[Publisher | Follower]
) -> None:
    sink = RecordingSink()
    feed = follower(etcd, cluster, "B", sink, MemoryMarkers())
    pub = publisher(etcd, cluster, "A")
    closing += [pub, feed]
    wait_for(lambda: feed.connected)
    heard = [Origin("sqs://q", 1_000), None, Origin("seaweedfs://f:1/buckets", 3_000)]
    revision = pub.publish([event(1), event(2), event(3)], 5, heard)
    assert revision is not None and feed.wait_applied(revision, timeout_s=10)
    assert sink.origins == [{"sqs://q": (1_000,), "seaweedfs://f:1/buckets": (3_000,)}]
    plain = pub.publish([event(4)], wait_s=5)  # a worker's own change: no times
    assert plain is not None and feed.wait_applied(plain, timeout_s=10)
    assert len(sink.origins) == 1


def test_a_restarted_follower_catches_up_from_its_saved_position(
    etcd: Etcd, cluster: str, closing: list[Publisher | Follower]
) -> None:
    sink, markers = RecordingSink(), MemoryMarkers()
    feed = follower(etcd, cluster, "B", sink, markers)
    pub = publisher(etcd, cluster, "A")
    closing.append(pub)
    wait_for(lambda: feed.connected)
    first = pub.publish([event(1)], wait_s=5)
    assert first is not None and feed.wait_applied(first, 10)
    feed.close()
    assert json.loads(markers.value or b"")["revision"] >= first
    missed = pub.publish([event(2), event(3)], wait_s=5)
    assert missed is not None
    again = RecordingSink()
    feed = follower(etcd, cluster, "B", again, markers)
    closing.append(feed)
    wait_for(lambda: feed.applied >= missed)
    assert again.events == [event(2), event(3)]
    # Only the first start's reset (no position then) holds again; nothing new was lost.
    assert again.resets == sink.resets and feed.resets["unknown_start"] == 0


def test_no_saved_position_starts_at_the_head_with_a_reset(
    etcd: Etcd, cluster: str, closing: list[Publisher | Follower]
) -> None:
    pub = publisher(etcd, cluster, "A")
    closing.append(pub)
    before = pub.publish([event(1)], wait_s=5)
    assert before is not None
    sink = RecordingSink()
    feed = follower(etcd, cluster, "B", sink, MemoryMarkers())
    closing.append(feed)
    wait_for(lambda: feed.connected)
    assert sink.events == []
    assert len(sink.resets) == 1 and feed.resets["unknown_start"] == 1


def test_past_a_compaction_the_follower_resets_and_goes_on(
    own_etcd: LocalEtcd, closing: list[Publisher | Follower]
) -> None:
    etcd = Etcd([own_etcd.endpoint], 2.0)
    sink, markers = RecordingSink(), MemoryMarkers()
    feed = follower(etcd, "c", "B", sink, markers)
    pub = publisher(etcd, "c", "A")
    closing.append(pub)
    wait_for(lambda: feed.connected)
    applied = pub.publish([event(1)], wait_s=5)
    assert applied is not None and feed.wait_applied(applied, 10)
    feed.close()
    for i in range(2, 5):
        pub.publish([event(i)], wait_s=5)
    etcd.compact(etcd.revision("/"))
    feed = follower(etcd, "c", "B", sink, markers)
    closing.append(feed)
    wait_for(lambda: feed.resets["compacted"] == 1)
    later = pub.publish([event(9)], wait_s=5)
    assert later is not None and feed.wait_applied(later, 10)
    # Events 2 and 3 are lost (compacted, covered by the reset); 4 is the compaction revision's
    # own, still readable, so it is replayed.
    assert sink.events == [event(1), event(4), event(9)]
    assert json.loads(markers.value or b"")["fence_ms"] == sink.resets[-1]


def test_a_burst_is_published_in_few_writes(
    etcd: Etcd, cluster: str, closing: list[Publisher | Follower]
) -> None:
    pub = publisher(etcd, cluster, "A")
    closing.append(pub)
    results: list[int | None] = []
    threads = [
        threading.Thread(target=lambda i=i: results.append(pub.publish([event(i)], 10)))
        for i in range(200)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert None not in results and len(results) == 200
    assert pub.published_batches < 200
    _, kvs = etcd.get_prefix(layout.feed_key(cluster))
    assert Batch.decode(kvs[0].value).worker == "A"


def test_while_etcd_is_down_events_wait_and_are_published_after(
    own_etcd: LocalEtcd, closing: list[Publisher | Follower]
) -> None:
    etcd = Etcd([own_etcd.endpoint], 1.0)
    sink = RecordingSink()
    feed = follower(etcd, "c", "B", sink, MemoryMarkers())
    pub = publisher(etcd, "c", "A")
    closing += [pub, feed]
    wait_for(lambda: feed.connected)
    own_etcd.stop()
    assert pub.publish([event(1)], wait_s=3) is None
    wait_for(lambda: not feed.connected)
    assert not feed.wait_applied(feed.applied + 1, 5)
    own_etcd.start()
    wait_for(lambda: sink.events == [event(1)], timeout=30)
    assert pub.pending == 0 and pub.failures >= 1


def test_overflow_while_down_becomes_one_reset(
    own_etcd: LocalEtcd, closing: list[Publisher | Follower]
) -> None:
    etcd = Etcd([own_etcd.endpoint], 1.0)
    sink = RecordingSink()
    feed = follower(etcd, "c", "B", sink, MemoryMarkers())
    pub = publisher(etcd, "c", "A", limit=3)
    closing += [pub, feed]
    wait_for(lambda: feed.connected)
    own_etcd.stop()
    for i in range(5):
        pub.publish([event(i)], wait_s=0.2)
    own_etcd.start()
    wait_for(lambda: feed.resets["reset_event"] == 1, timeout=30)
    assert pub.resets == 1


class _PausingEtcd(Etcd):
    """Holds the first watch until the test lets it return, so close() can run meanwhile."""

    def __init__(self, endpoint: str) -> None:
        super().__init__([endpoint], 2.0)
        self.opening = threading.Event()
        self.proceed = threading.Event()

    def watch(
        self, key: str, *, prefix: bool, start_revision: int, idle_timeout_s: float
    ) -> WatchStream:
        if not self.opening.is_set():
            self.opening.set()
            self.proceed.wait(15)
        return super().watch(
            key, prefix=prefix, start_revision=start_revision, idle_timeout_s=idle_timeout_s
        )


def test_close_while_the_watch_is_being_opened_returns_at_once(etcd_server: LocalEtcd) -> None:
    etcd = _PausingEtcd(etcd_server.endpoint)
    feed = Follower(etcd, layout.feed_key("race"), "B", RecordingSink(), MemoryMarkers(), 60)
    feed.start()
    assert etcd.opening.wait(15)
    closer = threading.Thread(target=feed.close)
    closer.start()
    # close() has set the stop flag and found no stream to end (none is open yet).
    wait_for(feed._stop.is_set)
    time.sleep(0.2)
    etcd.proceed.set()
    # Before the fix the watch opened after close() and ran until its 60 s idle timeout.
    closer.join(15)
    assert not closer.is_alive()
