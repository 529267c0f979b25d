"""The worker process's choice of event loop and HTTP protocol."""

from worker.http_target import Utf8TargetProtocol
from worker.httpproto import SlowClientGuard
from worker.server import event_loop, uvicorn_config
from worker.service import WorkerService


def test_the_worker_serves_with_uvloop_and_guarded_httptools(service: WorkerService) -> None:
    # Both are dependencies of the project: the pure-Python fallbacks cost the warm paths
    # a third of their speed (bench/lean_bench.py).
    assert event_loop() == "uvloop"
    config = uvicorn_config(lambda *_: None, service.config, service)  # type: ignore[arg-type]
    assert issubclass(config.http, SlowClientGuard)  # type: ignore[arg-type]
    assert config.http.policy.head_timeout == 20  # type: ignore[union-attr]
    assert issubclass(config.http, Utf8TargetProtocol)  # type: ignore[arg-type]
