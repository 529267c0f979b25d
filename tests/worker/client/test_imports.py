"""The client is light: `fsspec.filesystem("dora")` and the `dora` command import no server
code and no UFS library until they need one. Counted in a fresh interpreter by the modules it
loaded (never by time: that is `bench/RESULTS.md`'s)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SERVER_PACKAGES = {
    # the worker's own packages and the libraries only a worker (or a UFS fallback) needs
    "starlette", "fastapi", "uvicorn", "uvloop", "httptools", "rocksdict", "prometheus_client",
    "cachetools", "s3fs", "botocore", "aiobotocore", "aiohttp", "etcd3gw", "requests",
    "pyspark", "pyarrow", "pandas",
}  # fmt: skip
SERVER_MODULES = {"worker.server", "worker.service", "worker.api.app", "worker.meta.manager",
                  "worker.reader", "pagestore.store", "ufs.s3", "worker.cluster.etcd"}  # fmt: skip
CLIENT_BUDGET = 120
"""Modules the client may add to a process that already has fsspec, httpx, orjson and xxhash
(79 when this was written): a guard against a new import that drags a tree in."""


def loaded(script: str) -> dict[str, list[str]]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    prologue = "import sys, json\nimport fsspec, httpx, orjson, xxhash\nbefore = set(sys.modules)\n"
    epilogue = (
        "\nadded = sorted(set(sys.modules) - before)"
        "\nprint(json.dumps({'all': sorted(sys.modules), 'added': added}))"
    )
    answer = subprocess.run(
        [sys.executable, "-c", prologue + script + epilogue],
        capture_output=True, text=True, env=env, check=True, timeout=120,
    )  # fmt: skip
    result: dict[str, list[str]] = json.loads(answer.stdout.splitlines()[-1])
    return result


@pytest.mark.parametrize(
    "script",
    [
        "fs = fsspec.filesystem('dora')",
        # a cluster to follow: its etcd is asked on the first call, not at construction
        "import os\nos.environ['DORA_CLUSTER_ETCD_ENDPOINTS'] = 'http://127.0.0.1:9'\n"
        "fs = fsspec.filesystem('dora')",
        "import worker.cli.main",
    ],
)
def test_the_client_imports_no_server_code(script: str) -> None:
    modules = loaded(script)
    top = {name.split(".")[0] for name in modules["all"]}
    assert not top & SERVER_PACKAGES, sorted(top & SERVER_PACKAGES)
    assert not set(modules["all"]) & SERVER_MODULES, sorted(set(modules["all"]) & SERVER_MODULES)
    assert len(modules["added"]) <= CLIENT_BUDGET, len(modules["added"])


def test_a_fallback_to_s3_imports_s3fs_when_it_first_reaches_s3() -> None:
    modules = loaded(
        "from ufs.adapter import Ufs, UfsOptions\n"
        "from ufs.kinds.s3 import S3Options\n"
        "ufs = Ufs(UfsOptions(kinds=(S3Options(endpoint='http://127.0.0.1:9'),)))\n"
        "assert 's3fs' not in sys.modules\n"
        "ufs._of('s3://bucket/key')"
    )
    assert "s3fs" in modules["all"]
    assert "starlette" not in {name.split(".")[0] for name in modules["all"]}
