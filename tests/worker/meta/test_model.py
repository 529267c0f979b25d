"""Random sequences of outside changes, writes through the manager, restarts and lookups with
random sync intervals and versions, checked against a model of what the UFS held when.

The model keeps each path's history of versions with the (fake) time each one appeared. An
answer is correct if it names a version the UFS held at some instant the rules allow:
- sync interval 0: the version the UFS holds now;
- sync interval N: one held within the last min(N, life) ms, life being the metastore TTL for a
  status and, for "not found", the longer of the negative TTL and the listing TTL (a cached
  listing of the parent answers "not found" for a name it lacks);
- sync interval -1: one held within the last life ms;
- version=V: V itself (held within the life), or VersionMismatch/NotFound naming the present.
A listing never shows a file deleted through the manager (and not re-created since), and a
status never answers "not found" for a file written through it (and not deleted since).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    MultipleResults,
    RuleBasedStateMachine,
    consumes,
    invariant,
    multiple,
    rule,
)

from tests.worker.meta.support import (
    SECOND,
    CountingUfs,
    FakeClock,
    Outside,
    cache_options,
    rocks_store,
)
from ufs.adapter import Ufs
from ufs.errors import UfsNotFound
from worker.meta.entry import Lifetimes, Operation
from worker.meta.errors import MetaVersionMismatch
from worker.meta.manager import MetadataManager

FILES = ["d/a", "d/b", "e/a"]
DIRS = ["d", "e"]
LIFETIMES = Lifetimes(ttl_ms=60 * SECOND, negative_ttl_ms=10 * SECOND)
LIST_TTL = 30 * SECOND
FOREVER = 2**62
# RocksDB fsyncs when it opens and closes; this test does that hundreds of times, so it uses
# tmpfs where there is one.
FAST_TMP = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
# Hypothesis favours the first values: the telling ones lead (a positive interval, "never").
intervals = st.sampled_from([1000, -1, 5 * SECOND, 0, 1, 20 * SECOND, 90 * SECOND])


class MetadataModel(RuleBasedStateMachine):
    # Names just listed, or just found missing: rules that change exactly those make the
    # interesting interleavings (delete a listed file, create a file cached as missing) likely.
    listed = Bundle("listed")
    missing = Bundle("missing")

    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="meta-model-", dir=FAST_TMP))
        (self.tmp / "ufs").mkdir()
        self.outside = Outside(self.tmp / "ufs")
        for name in DIRS:
            (self.tmp / "ufs" / name).mkdir()
        self.truth = Ufs()
        self.clock = FakeClock()
        self.history: dict[str, list[tuple[int, str | None]]] = {
            n: [(-FOREVER, None)] for n in FILES
        }
        self.deleted_through_manager: set[str] = set()
        self.written_through_manager: set[str] = set()
        self.manager = self._start()

    def _start(self) -> MetadataManager:
        options = cache_options(
            status_cache_size=2, status_ttl_ms=20 * SECOND, list_ttl_ms=LIST_TTL
        )
        store = rocks_store(self.tmp / "ms", self.clock, LIFETIMES)
        return MetadataManager(options, store, CountingUfs(), self.clock)

    def teardown(self) -> None:
        self.manager.close()
        shutil.rmtree(self.tmp)

    # -- the world changes -----------------------------------------------------------------------

    def _record(self, name: str) -> str | None:
        try:
            version: str | None = self.truth.status(self.outside.uri(name)).version
        except UfsNotFound:
            version = None
        if version is not None:
            self.deleted_through_manager.discard(name)
        else:
            self.written_through_manager.discard(name)
        self.history[name].append((self.clock.now, version))
        return version

    def _exists(self, name: str) -> bool:
        return self.history[name][-1][1] is not None

    @rule(name=st.sampled_from(FILES), size=st.integers(0, 64))
    def write_outside(self, name: str, size: int) -> None:
        self.outside.write(name, b"x" * size)
        self._record(name)

    @rule(name=consumes(missing), size=st.integers(0, 64), interval=intervals)
    def create_missing_outside(self, name: str, size: int, interval: int) -> None:
        self.write_outside(name, size)
        # What a reader told of the new file by a manifest does next: ask for that version.
        self.get_version(name, interval, pick=0)

    @rule(name=st.sampled_from(FILES))
    def delete_outside(self, name: str) -> None:
        if self._exists(name):
            self.outside.delete(name)
            self._record(name)

    @rule(src=st.sampled_from(FILES), dst=st.sampled_from(FILES))
    def rename_outside(self, src: str, dst: str) -> None:
        if self._exists(src) and src != dst:
            self.outside.rename(src, dst)
            self._record(src)
            self._record(dst)

    @rule(name=st.sampled_from(FILES), size=st.integers(0, 64), create=st.booleans())
    def write_through(self, name: str, size: int, create: bool) -> None:
        self.outside.write(name, b"y" * size)
        self._record(name)
        status = self.truth.status(self.outside.uri(name))
        op = Operation.CREATED if create else Operation.UPDATED
        self.manager.writes.record_write(self.outside.uri(name), status, op)
        self.written_through_manager.add(name)

    @rule(name=st.sampled_from(FILES), interval=intervals)
    def delete_through(self, name: str, interval: int) -> None:
        if self._exists(name):
            self.outside.delete(name)
            self._record(name)
        self.manager.writes.record_write(self.outside.uri(name), None, Operation.DELETED)
        self.deleted_through_manager.add(name)
        # What a user does next: list the directory (checked like any listing).
        self.list_status(name.split("/", maxsplit=1)[0], interval)

    @rule(name=consumes(listed), interval=intervals)
    def delete_listed_through(self, name: str, interval: int) -> None:
        self.delete_through(name, interval)

    @rule(path=st.sampled_from(FILES + DIRS), recursive=st.booleans())
    def invalidate(self, path: str, recursive: bool) -> None:
        self.manager.writes.invalidate(self.outside.uri(path), recursive)

    @rule(ms=st.sampled_from([999, 1, 5 * SECOND, 10 * SECOND, 0, 25 * SECOND, 70 * SECOND]))
    def advance(self, ms: int) -> None:
        self.clock.advance(ms)

    @rule()
    def restart(self) -> None:
        self.manager.close()
        self.manager = self._start()

    # -- lookups, checked ------------------------------------------------------------------------

    def _held(self, name: str, within: int) -> set[str | None]:
        """Versions ``name`` had at some instant of the last ``within`` ms (ends inclusive)."""
        now, history = self.clock.now, self.history[name]
        held = set()
        for i, (since, version) in enumerate(history):
            until = history[i + 1][0] if i + 1 < len(history) else FOREVER
            if since <= now and until >= now - within:
                held.add(version)
        return held

    @rule(target=missing, name=st.sampled_from(FILES), interval=intervals)
    def get_status(self, name: str, interval: int) -> MultipleResults[str]:
        window = FOREVER if interval == -1 else interval
        try:
            version: str | None = self.manager.reads.get_status(
                self.outside.uri(name), interval
            ).version
            life = LIFETIMES.ttl_ms
        except UfsNotFound:
            version, life = None, max(LIFETIMES.negative_ttl_ms, LIST_TTL)
        if interval == 0:
            assert version == self.history[name][-1][1]
        assert version in self._held(name, min(window, life))
        assert version is not None or name not in self.written_through_manager
        return multiple() if version is not None else multiple(name)

    @rule(
        name=st.sampled_from(FILES),
        size=st.integers(0, 64),
        ms=st.sampled_from([999, 1, 5 * SECOND, 25 * SECOND, 70 * SECOND]),
        interval=intervals,
    )
    def reread_after_change(self, name: str, size: int, ms: int, interval: int) -> None:
        """The pattern staleness needs: read (caching it), change it outside, wait, read."""
        self.get_status(name, -1)
        self.write_outside(name, size)
        self.advance(ms)
        self.get_status(name, interval)

    @rule(name=st.sampled_from(FILES), interval=intervals, pick=st.integers(0, 7))
    def get_version(self, name: str, interval: int, pick: int) -> None:
        current = self.history[name][-1][1]
        # The present version first: small picks are the likeliest, and the most telling.
        choices = [v for v in [current, *(v for _, v in self.history[name])] if v is not None]
        choices.append("bogus")
        wanted = choices[pick % len(choices)]
        try:
            status = self.manager.reads.get_status(self.outside.uri(name), interval, version=wanted)
        except MetaVersionMismatch as exc:
            assert exc.actual == current != wanted
        except UfsNotFound:
            assert current is None
        else:
            assert status.version == wanted
            assert wanted in self._held(name, LIFETIMES.ttl_ms)

    @rule(target=listed, directory=st.sampled_from(DIRS), interval=intervals)
    def list_status(self, directory: str, interval: int) -> MultipleResults[str]:
        listed = self.manager.reads.list_status(self.outside.uri(directory), interval)
        names = {f"{directory}/{s.name}": s.version for s in listed}
        assert not names.keys() & self.deleted_through_manager
        if interval == 0:
            truth = {n: h[-1][1] for n, h in self.history.items() if n.startswith(directory + "/")}
            assert names == {n: v for n, v in truth.items() if v is not None}
        window = min(FOREVER if interval == -1 else interval, LIST_TTL)
        for name, version in names.items():
            assert version in self._held(name, window)
        return multiple(*sorted(names))

    @invariant()
    def counters_add_up(self) -> None:
        counts = self.manager.counters()
        assert counts["syncs_changed"] <= counts["syncs"]


TestMetadataModel = MetadataModel.TestCase
TestMetadataModel.settings = settings(
    max_examples=200,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
