"""DuckDB with its ``httpfs`` extension, in an interpreter of its own, for the S3 endpoint's
tests: the extension's PyPI wheel (``duckdb-ext-httpfs``) is built for one DuckDB release,
older than the project's, so that DuckDB and the wheel go in a virtualenv under
``.venv-duckdb/``, built on first use from PyPI into a temporary directory renamed into place
(a build cut short is never mistaken for a finished one), and the extension is loaded from the
wheel's extension directory (DuckDB would otherwise download it, which cannot be done here)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
VENV = ROOT / ".venv-duckdb"
DUCKDB = "1.4.4"
HTTPFS = "1.4.4.20260205"
INSTALL_TIMEOUT_S = 600
QUERY_TIMEOUT_S = 240

# Run under that interpreter: the request (endpoint, credentials, statements) on stdin, each
# statement's rows on stdout as JSON.
_DRIVER = """
import json, sys, duckdb, duckdb_ext, pathlib
request = json.load(sys.stdin)
extensions = pathlib.Path(duckdb_ext.__path__[0]) / "extensions"
connection = duckdb.connect(config={"extension_directory": str(extensions),
                                    "autoinstall_known_extensions": False})
connection.execute("LOAD httpfs")
s3 = request["s3"]
connection.execute(
    "CREATE SECRET dora (TYPE s3, KEY_ID ?, SECRET ?, REGION 'us-east-1', ENDPOINT ?, "
    "URL_STYLE 'path', USE_SSL false)".replace("?", "'{}'").format(
        s3["key_id"], s3["secret"], s3["endpoint"]))
rows = [connection.execute(sql).fetchall() for sql in request["sql"]]
json.dump(rows, sys.stdout, default=str)
"""


def python() -> str:
    """The interpreter that has DuckDB and its httpfs wheel."""
    if not (VENV / "bin" / "python").exists():
        _build()
    return str(VENV / "bin" / "python")


def _build() -> None:
    VENV.parent.mkdir(exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix=".venv-duckdb.", dir=VENV.parent))
    try:
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(building)], check=True)
        subprocess.run(
            [sys.executable, "-m", "pip", "--python", str(building / "bin" / "python"),
             "install", "--quiet", f"duckdb=={DUCKDB}", f"duckdb-ext-httpfs=={HTTPFS}"],
            check=True, timeout=INSTALL_TIMEOUT_S,
        )  # fmt: skip
        try:
            building.rename(VENV)
        except OSError:
            if not VENV.exists():
                raise  # else another run built it first: keep theirs
    finally:
        shutil.rmtree(building, ignore_errors=True)


def query(endpoint: str, key_id: str, secret: str, sql: list[str]) -> list[list[Any]]:
    """The rows of each statement of ``sql``, run by DuckDB against the S3 endpoint at
    ``endpoint`` (``host:port``, plain HTTP, path style)."""
    request = {"s3": {"endpoint": endpoint, "key_id": key_id, "secret": secret}, "sql": sql}
    done = subprocess.run([python(), "-c", _DRIVER], input=json.dumps(request).encode(),
                          capture_output=True, timeout=QUERY_TIMEOUT_S, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()[-4000:]
    rows: list[list[Any]] = json.loads(done.stdout)
    return rows


if __name__ == "__main__":
    print(python())
