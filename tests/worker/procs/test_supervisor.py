"""What the primary gives its front processes (worker/procs/supervisor.py)."""

import logging

from config import load_config
from worker import logs
from worker.keys import build_registry
from worker.procs.supervisor import _environment


def test_a_front_gets_every_setting_the_port_and_the_log_format() -> None:
    config = load_config(
        build_registry(),
        environ={},
        defines=["dora.worker.processes=3", "dora.worker.security.token=t", "dora.work.dir=/w"],
    )
    env = _environment(config, 4321)
    assert env["DORA_WORKER_SECURITY_TOKEN"] == "t" and env["DORA_WORK_DIR"] == "/w"
    assert env["DORA_WORKER_HTTP_PORT"] == "4321"
    assert env.get("DORA_WORKER_LOG_FORMAT") is None
    fronts_config = load_config(build_registry(), environ=env)
    assert fronts_config.get(logs.LOG_FORMAT) == "text"
    handler = logging.StreamHandler()
    handler.setFormatter(logs.JsonFormatter())  # as `dora worker start --log-format json` does
    logging.getLogger().addHandler(handler)
    try:
        assert _environment(config, 4321)["DORA_WORKER_LOG_FORMAT"] == "json"
    finally:
        logging.getLogger().removeHandler(handler)
