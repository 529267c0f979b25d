"""Runs operations through Alluxio's own client, ``alluxiofs``, in whatever interpreter runs it
(each tested alluxiofs version lives in its own virtualenv), and reports what came back.

``python alluxiofs_driver.py`` reads ``{"client": {...}, "ops": [[name, *args], ...]}`` as JSON
on stdin and prints ``{"results": [...], "errors": <alluxiofs's own error counters>}``. Bytes
come back as their sha256 and length. The client keeps an S3 fallback to SeaweedFS, as a user
would configure it: a call our worker fails would then still succeed, silently, from S3, and
only alluxiofs's error counters show it, which is why the tests check them.

Standard library and alluxiofs only: this file runs outside the project's environment.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import sys
import time
from collections.abc import Callable
from typing import Any

LOAD_WAIT_S = 60


def digest(data: Any) -> dict[str, Any]:
    if hasattr(data, "read"):
        data = data.read()
    return {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}


def make_fs(client: dict[str, Any]) -> Any:
    import fsspec
    from alluxiofs import AlluxioFileSystem

    fallback = fsspec.filesystem(
        "s3",
        key=client["s3_key"],
        secret=client["s3_secret"],
        client_kwargs={"endpoint_url": client["s3_endpoint"]},
        skip_instance_cache=True,
        use_listings_cache=False,
    )
    options = {k: v for k, v in client.items() if not k.startswith("s3_")}
    logger = logging.getLogger("alluxiofs-under-test")
    return AlluxioFileSystem(fs=fallback, logger=logger, skip_instance_cache=True, **options)


def _own(fs: Any, name: str) -> bool:
    """Whether alluxiofs itself defines ``name`` (an inherited fsspec default would bypass it)."""
    return name in type(fs).__dict__


def ls(fs: Any, path: str) -> list[list[Any]]:
    return sorted([e["ufs_path"], e["size"], e["type"]] for e in fs.ls(path, detail=True))


def info(fs: Any, path: str) -> dict[str, Any]:
    found = fs.info(path)
    return {key: found[key] for key in ("ufs_path", "size", "type")}


def open_seek(fs: Any, path: str, steps: list[list[int]]) -> dict[str, Any]:
    parts = []
    with fs.open(path, "rb") as f:
        for position, count in steps:
            f.seek(position)
            parts.append(f.read(count))
    return digest(b"".join(parts))


def write(fs: Any, path: str, data: str) -> Any:
    method = fs.write_bytes if _own(fs, "write_bytes") else fs.write
    return method(path, base64.b64decode(data))


def load_wait(fs: Any, path: str) -> str:
    deadline = time.monotonic() + LOAD_WAIT_S
    while True:
        state = fs.alluxio.load_progress(path)[0].value
        if state != "RUNNING" or time.monotonic() > deadline:
            return str(state)
        time.sleep(0.1)


OPS: dict[str, Callable[..., Any]] = {
    "ls": ls,
    "ls_names": lambda fs, path: sorted(fs.ls(path)),
    "info": info,
    "exists": lambda fs, path: fs.exists(path),
    "isdir": lambda fs, path: fs.isdir(path),
    "cat": lambda fs, path, start=0, end=None: digest(fs.cat_file(path, start, end)),
    "chunked": lambda fs, path: digest(fs.alluxio.read_chunked(path)),
    "open_seek": open_seek,
    "head": lambda fs, path, count: digest(fs.head(path, count)),
    "tail": lambda fs, path, count: digest(fs.tail(path, count)),
    "write": write,
    "write_page": lambda fs, path, index, data: fs.alluxio.write_page(
        path, index, base64.b64decode(data)
    ),
    "mkdir": lambda fs, path: fs.mkdir(path),
    "touch": lambda fs, path: fs.touch(path),
    "rm": lambda fs, path, recursive=False: fs.rm(path, recursive),
    "mv": lambda fs, src, dst: fs.mv(src, dst),
    "copy": lambda fs, src, dst: fs.copy(src, dst),
    "load_submit": lambda fs, path: fs.alluxio.submit_load(path),
    "load_wait": load_wait,
    "load_stop": lambda fs, path: fs.alluxio.stop_load(path),
}


def run(fs: Any, ops: list[list[Any]]) -> dict[str, Any]:
    results = []
    for name, *args in ops:
        try:
            results.append({"value": OPS[name](fs, *args)})
        except Exception as exc:  # noqa: BLE001 — reported to the test, which fails on it
            results.append({"error": f"{type(exc).__name__}: {exc}"})
    return {"results": results, "errors": fs.get_error_metrics()["error_counts"]}


def main() -> None:
    request = json.load(sys.stdin)
    json.dump(run(make_fs(request["client"]), request["ops"]), sys.stdout)


if __name__ == "__main__":
    main()
