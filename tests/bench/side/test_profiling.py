"""py-spy's collapsed stacks summarised by function: self and total shares."""

from bench.side.profiling import ProfileSpec, format_top, function_of, summarize

RAW = """\
<module> (worker/cli/main.py:10);run (asyncio/events.py:80);send (h11/_connection.py:500) 6
<module> (worker/cli/main.py:10);run (asyncio/events.py:80);read (pagestore/store.py:200) 3
<module> (worker/cli/main.py:10);run (asyncio/events.py:81) 1
<module> (worker/cli/main.py:10);EpollSelector.select (/usr/lib/python3.11/selectors.py:468) 5
_bootstrap (threading.py:1002);_worker (concurrent/futures/thread.py:81) 5
"""


def test_summarize_groups_lines_of_one_function_and_sets_waits_apart() -> None:
    summary = summarize(RAW)
    assert (summary.samples, summary.waiting) == (20, 0.5)
    assert summary.top_self[0] == ("send (h11/_connection.py)", 0.6)
    assert dict(summary.top_total)["run (asyncio/events.py)"] == 1.0
    assert format_top(summary.top_self, 2) == (
        "send (h11/_connection.py) 60%; read (pagestore/store.py) 30%"
    )


def test_function_of_keeps_two_path_parts() -> None:
    assert function_of("get (/a/b/c/store.py:12)") == "get (c/store.py)"
    assert function_of("odd frame") == "odd frame"


def test_spec_matches_workload_and_row_part() -> None:
    spec = ProfileSpec.parse("random-read:dora fsspec, warm", "worker")
    assert spec.matches("random-read", "dora fsspec, warm")
    assert not spec.matches("random-read", "dora raw HTTP, warm")
    assert ProfileSpec.parse("info", "bench").matches("info", "s3fs")
