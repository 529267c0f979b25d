"""The worker process's choice of event loop and HTTP protocol, and a refused start."""

from pathlib import Path

import pytest

from config import ConfigError, load_config
from worker import assembly
from worker.http_target import Utf8TargetProtocol
from worker.httpproto import SlowClientGuard
from worker.keys import build_registry
from worker.server import ProcessOptions, event_loop, serve, uvicorn_config
from worker.service import WorkerService


def test_the_worker_serves_with_uvloop_and_guarded_httptools(service: WorkerService) -> None:
    # Both are dependencies of the project: the pure-Python fallbacks cost the warm paths
    # a third of their speed (bench/experiments/lean_bench.py).
    assert event_loop() == "uvloop"
    config = uvicorn_config(lambda *_: None, service.config, service)  # type: ignore[arg-type]
    assert issubclass(config.http, SlowClientGuard)  # type: ignore[arg-type]
    assert config.http.policy.head_timeout == 20  # type: ignore[union-attr]
    assert issubclass(config.http, Utf8TargetProtocol)  # type: ignore[arg-type]


def test_a_bad_s3_bucket_is_refused_with_nothing_left_open(tmp_path: Path) -> None:
    """The S3 endpoint's settings are checked before the service opens its stores: a refused
    start leaves the metastore free for the next one."""
    defines = [f"dora.work.dir={tmp_path}", "dora.worker.http.port=0",
               f"dora.worker.ufs.roots=file://{tmp_path}",
               "dora.worker.s3.buckets=data=file:///outside/the/roots"]  # fmt: skip
    config = load_config(build_registry(), environ={}, defines=defines)
    with pytest.raises(ConfigError, match="dora.worker.s3.buckets"):
        serve(config, ProcessOptions())
    again = load_config(build_registry(), environ={}, defines=defines[:3])
    assembly.open_service(again).close()
