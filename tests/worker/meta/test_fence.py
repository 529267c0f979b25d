"""The mutation fence: a load is stale iff its URI was mutated after it began."""

from __future__ import annotations

from worker.meta.fence import MutationFence


def test_a_mark_after_begin_makes_that_uri_stale_only() -> None:
    fence = MutationFence()
    token = fence.begin()
    fence.mark("s3://b/a")
    assert fence.is_stale("s3://b/a", token)
    assert not fence.is_stale("s3://b/ab", token)
    later = fence.begin()
    assert not fence.is_stale("s3://b/a", later)
    fence.end(token)
    fence.end(later)


def test_a_prefix_mark_covers_descendants_on_segment_boundaries() -> None:
    fence = MutationFence()
    token = fence.begin()
    fence.mark_under("s3://b/d")
    assert fence.is_stale("s3://b/d/x/y", token)
    assert fence.is_stale("s3://b/d", token)
    assert not fence.is_stale("s3://b/d-x", token)
    fence.end(token)


def test_marks_are_forgotten_once_no_load_needs_them() -> None:
    fence = MutationFence()
    fence.mark("s3://b/a")  # no load running: nothing to remember
    first = fence.begin()
    fence.mark("s3://b/a")
    second = fence.begin()
    fence.mark("s3://b/b")
    fence.end(first)
    assert fence.is_stale("s3://b/b", second)
    assert not fence.is_stale("s3://b/a", second)
    fence.end(second)
    assert len(fence) == 0
