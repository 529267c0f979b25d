"""py-spy's collapsed stacks summarised by function: self and total shares."""

from bench.side.profiling import ProfileSpec, format_top, function_of, summarize

RAW = """\
<module> (worker/cli/main.py:10);run (asyncio/events.py:80);send (h11/_connection.py:500) 6
<module> (worker/cli/main.py:10);run (asyncio/events.py:80);read (pagestore/store.py:200) 3
<module> (worker/cli/main.py:10);run (asyncio/events.py:81) 1
"""


def test_summarize_groups_lines_of_one_function() -> None:
    samples, own, total = summarize(RAW)
    assert samples == 10
    assert own[0] == ("send (h11/_connection.py)", 0.6)
    assert dict(total)["run (asyncio/events.py)"] == 1.0
    assert format_top(own, 2) == "send (h11/_connection.py) 60%; read (pagestore/store.py) 30%"


def test_function_of_keeps_two_path_parts() -> None:
    assert function_of("get (/a/b/c/store.py:12)") == "get (c/store.py)"
    assert function_of("odd frame") == "odd frame"


def test_spec_matches_workload_and_row_part() -> None:
    spec = ProfileSpec.parse("random-read:dora fsspec, warm", "worker")
    assert spec.matches("random-read", "dora fsspec, warm")
    assert not spec.matches("random-read", "dora raw HTTP, warm")
    assert ProfileSpec.parse("info", "bench").matches("info", "s3fs")
