"""The worker's opt-in memory tracing: its figures, its snapshots, and what it leaves on disk."""

from __future__ import annotations

import json
import stat
import tracemalloc
from pathlib import Path

from config import load_config
from worker.keys import build_registry
from worker.memtrace import FIGURES_FILE, TRACE_DIR, MemoryTrace, tracing

HELD: list[bytes] = []


def held_here() -> None:
    HELD.extend(bytes(1000) for _ in range(2000))


def test_snapshots_show_the_site_that_grew(tmp_path: Path) -> None:
    trace = MemoryTrace(tmp_path, interval=3600, frames=2).start()  # records at start only
    try:
        held_here()
        trace.record()
    finally:
        trace.close()
        HELD.clear()
    lines = [json.loads(line) for line in (tmp_path / FIGURES_FILE).read_text().splitlines()]
    assert len(lines) == 3  # at start, the one asked for, at close
    assert lines[1]["python_traced"] - lines[0]["python_traced"] >= 2000 * 1000
    assert {"rss", "rss_anon", "rss_file", "python_blocks", "tracemalloc_overhead"} <= set(lines[0])
    before, after = (tracemalloc.Snapshot.load(str(tmp_path / f"000{n}.snapshot")) for n in (0, 1))
    grown = after.compare_to(before, "traceback")[0]
    assert grown.size_diff >= 2000 * 1000
    assert any(frame.lineno and "test_memtrace" in frame.filename for frame in grown.traceback)
    assert not tracemalloc.is_tracing()


def test_without_frames_it_writes_figures_only(tmp_path: Path) -> None:
    trace = MemoryTrace(tmp_path, interval=3600).start()
    trace.close()
    assert sorted(path.name for path in tmp_path.iterdir()) == [FIGURES_FILE]
    line = json.loads((tmp_path / FIGURES_FILE).read_text().splitlines()[0])
    assert line["python_traced"] == 0 and line["rss"] > 0


def test_off_by_default_and_private_when_on(tmp_path: Path, umask_000: None) -> None:
    defines = [f"dora.work.dir={tmp_path}"]
    with tracing(load_config(build_registry(), environ={}, defines=defines)) as trace:
        assert trace is None
    assert not (tmp_path / TRACE_DIR).exists()
    defines += ["dora.worker.debug.memory.trace.interval=1h"]
    defines += ["dora.worker.debug.memory.trace.frames=1"]
    with tracing(load_config(build_registry(), environ={}, defines=defines)) as trace:
        assert trace is not None and tracemalloc.is_tracing()
    made = [tmp_path / TRACE_DIR, *(tmp_path / TRACE_DIR).iterdir()]
    assert {stat.S_IMODE(path.stat().st_mode) for path in made} == {0o700, 0o600}
