"""The client is a leaf: `fsspec.filesystem("dora")` loads the client's own modules, the package
it shares with the worker (`worker.common`) and what those need of `config` and the UFS's
vocabulary, and nothing else of this project; the import contract (`lint-imports`, declared in
pyproject.toml) holds for every import in the code, including those made on first use. Counted
in a fresh interpreter by the modules it loaded (never by time: that is `bench/RESULTS.md`'s)."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
FIRST_PARTY = {"worker", "config", "ufs", "pagestore"}
CLIENT_MAY_LOAD = re.compile(
    r"worker|worker\.(client|common)(\..*)?|config(\.(errors|keys|loader|units))?"
    r"|ufs(\.(errors|uri|status|keys|kind|kinds(\.\w+)?))?"
)
"""What the client may load of this project. Anything else is server code reached by a new
import: make it reach `worker.common` instead, or import it where it is first needed. The UFS
kinds' declarations (``ufs.kinds.*``) are keys and error tables, no storage client: the client
reads their keys for its fallback to the UFS."""
THIRD_PARTY_MAY_LOAD = {"fsspec"}
"""Libraries the client may load beyond those loaded before it (fsspec, httpx, orjson, xxhash):
fsspec's own submodules."""
SERVER_PACKAGES = {
    # the libraries only a worker (or a UFS fallback, or a cluster's client) needs
    "starlette", "fastapi", "uvicorn", "uvloop", "httptools", "rocksdict", "prometheus_client",
    "cachetools", "s3fs", "botocore", "aiobotocore", "aiohttp", "etcd3gw", "requests",
    "pyspark", "pyarrow", "pandas",
}  # fmt: skip


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
        "import worker.client\nfs = worker.client.DoraFileSystem()",
        # a cluster to follow: its etcd is asked on the first call, not at construction
        "import os\nos.environ['DORA_CLUSTER_ETCD_ENDPOINTS'] = 'http://127.0.0.1:9'\n"
        "fs = fsspec.filesystem('dora')",
    ],
)
def test_the_client_loads_only_its_own_modules_and_the_shared_ones(script: str) -> None:
    added = loaded(script)["added"]
    ours = [name for name in added if name.split(".")[0] in FIRST_PARTY]
    assert [name for name in ours if not CLIENT_MAY_LOAD.fullmatch(name)] == []
    libraries = {name.split(".")[0] for name in added} - FIRST_PARTY - sys.stdlib_module_names
    assert libraries <= THIRD_PARTY_MAY_LOAD, sorted(libraries - THIRD_PARTY_MAY_LOAD)


def test_the_import_contract_holds() -> None:
    """import-linter's contracts (pyproject.toml): no import in `worker.client` or
    `worker.common`, at the top of a module or inside a function, reaches server code but the
    few declared there (the UFS fallback, short-circuit page files, following etcd)."""
    answer = subprocess.run(
        [str(Path(sys.executable).parent / "lint-imports"), "--no-cache"],
        check=False, capture_output=True, text=True, cwd=ROOT, timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert answer.returncode == 0, answer.stdout[-3000:] + answer.stderr[-2000:]
    # The client's two contracts and the one keeping the product off worker.devlab, at least.
    kept = re.search(r"Contracts: (\d+) kept, 0 broken\.", answer.stdout)
    assert kept is not None and int(kept.group(1)) >= 3, answer.stdout[-3000:]


def test_the_dora_command_imports_no_server_library() -> None:
    """`dora` builds the full key registry (its `worker start` serves), yet starts without the
    worker's libraries: they are imported by `dora worker start`."""
    top = {name.split(".")[0] for name in loaded("import worker.cli.main")["all"]}
    assert not top & SERVER_PACKAGES, sorted(top & SERVER_PACKAGES)


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
