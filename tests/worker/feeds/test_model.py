"""A model-based test of the change-feed contract on one worker over a local directory: outside
writes, their events delivered late, out of order, twice or never (then a gap), and reads at
sync interval -1 and 0. No read may be staler than the contract allows: at 0 the newest bytes;
at -1 the newest, or an older version only while the event of a write after it is still
undelivered and no gap has passed since."""

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.worker.conftest import open_service
from worker.feeds.change import Change

OPS = st.lists(
    st.one_of(
        st.just(("write",)),
        st.tuples(st.just("deliver"), st.integers(0, 5), st.booleans()),
        st.just(("gap",)),
        st.tuples(st.just("read"), st.sampled_from([-1, 0])),
    ),
    max_size=15,
)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(ops=OPS)
# The shortest runs that need a gap, and an event naming a version the cache does not hold.
@example(ops=[("read", -1), ("write",), ("gap",), ("read", -1)])
@example(ops=[("read", -1), ("write",), ("deliver", 0, False), ("read", -1)])
def test_no_read_is_staler_than_the_contract(ops: list[tuple[object, ...]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        data.mkdir()
        path, uri = data / "f", f"file://{data}/f"
        contents = [b"v0"]
        path.write_bytes(contents[0])
        versions = [""]
        service = open_service(
            Path(tmp) / "work", f"file://{data}", "dora.user.file.metadata.sync.interval=-1"
        )
        # Writes (by index into contents) whose events have not been applied.
        pending: list[int] = []
        try:
            for op in ops:
                if op[0] == "write":
                    # Each version one byte longer: a local file's version is size + mtime.
                    contents.append(b"v" * (len(contents[-1]) + 1))
                    path.write_bytes(contents[-1])
                    versions.append(service.ufs.status(uri).version)
                    pending.append(len(contents) - 1)
                elif op[0] == "deliver" and pending:
                    index = pending[int(op[1]) % len(pending)]  # any order
                    service.changes.apply("test", [Change(uri, versions[index])])
                    if not op[2]:  # else delivered again later (at least once)
                        pending.remove(index)
                elif op[0] == "gap":
                    pending.clear()  # the undelivered events are lost, and the feed says so
                    service.changes.gap("model", "lost events")
                elif op[0] == "read":
                    served = b"".join(service.read(service.request(uri, int(op[1]))).chunks)
                    oldest = min(pending, default=len(contents)) - 1
                    allowed = contents[oldest:] if op[1] == -1 else contents[-1:]
                    assert served in allowed, (served, allowed, ops)
        finally:
            service.close()
