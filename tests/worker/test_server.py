"""The worker process's choice of event loop and HTTP parser."""

from worker.http_target import Utf8TargetProtocol
from worker.server import fast_protocols


def test_the_worker_serves_with_uvloop_and_httptools_as_installed() -> None:
    # Both are dependencies of the project: the pure-Python fallbacks cost the warm paths
    # a third of their speed (bench/lean_bench.py).
    assert fast_protocols() == ("uvloop", Utf8TargetProtocol)
