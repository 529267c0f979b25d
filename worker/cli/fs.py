"""``dora fs``: file operations through a running worker's REST API, like ``alluxio fs``.

Per-call options go as ``-D`` too: ``dora fs ls s3://b/ -Ddora.user.file.metadata.sync.interval=0``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx

from config import Config
from worker.cli.common import EXIT_FAILURE, EXIT_USAGE, config_options, load
from worker.client.errors import DoraError, WorkerUnavailable, error_from_response
from worker.client.options import ClientOptions

DEFAULT_HEAD_BYTES = 1024
STREAM_CHUNK = 1 << 20
SYNCED_ROUTES = frozenset({"/v1/status", "/v1/list", "/v1/read"})


class WorkerCalls:
    """A tiny synchronous REST client for the CLI, on the fsspec client's options (worker
    address, ``dora.user.client.token``, timeout, sync interval) and its error mapping. Not
    thread-safe (one CLI command at a time)."""

    def __init__(self, config: Config, worker: str | None) -> None:
        options = ClientOptions.resolve(config, workers=[worker] if worker else None)
        self.base, self.worker = options.workers[0], options.ring_names[0]
        headers = {"Authorization": f"Bearer {options.token}"} if options.token else {}
        self.http = httpx.Client(base_url=self.base, headers=headers, timeout=options.timeout_s)
        self.sync = options.sync_interval

    def _query(self, route: str, params: dict[str, Any]) -> dict[str, Any]:
        if self.sync is not None and route in SYNCED_ROUTES:
            params.setdefault("sync_interval", self.sync)
        return {k: v for k, v in params.items() if v is not None}

    def call(self, method: str, route: str, **params: Any) -> httpx.Response:
        try:
            response = self.http.request(method, route, params=self._query(route, params))
        except httpx.TransportError as exc:
            raise WorkerUnavailable(f"cannot reach the worker at {self.base}: {exc}") from exc
        return self.checked(response, f"{method} {route}")

    def stream(self, route: str, **params: Any) -> Iterator[bytes]:
        try:
            with self.http.stream("GET", route, params=self._query(route, params)) as response:
                if response.is_error:
                    response.read()
                    self.checked(response, f"GET {route}")
                yield from response.iter_bytes(STREAM_CHUNK)
        except httpx.TransportError as exc:
            raise WorkerUnavailable(f"reading from {self.base} failed: {exc}") from exc

    def checked(self, response: httpx.Response, what: str) -> httpx.Response:
        if response.is_error:
            raise error_from_response(response, self.worker, what)
        return response


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    fs = commands.add_parser("fs", help="file operations through a worker")
    actions = fs.add_subparsers(dest="action", required=True)
    common = argparse.ArgumentParser(add_help=False, parents=[config_options()])
    common.add_argument("--worker", metavar="HOST:PORT", help="worker address")

    def sub(
        name: str, fn: Callable[[WorkerCalls, argparse.Namespace], int], help_text: str
    ) -> argparse.ArgumentParser:
        parser = actions.add_parser(name, parents=[common], help=help_text)
        parser.set_defaults(handler=lambda args: _run(fn, args))
        return parser

    sub("ls", ls, "list a directory").add_argument("path")
    sub("stat", stat, "show a status as JSON").add_argument("path")
    sub("cat", cat, "write a file to stdout").add_argument("path")
    for name, fn in (("head", head), ("tail", tail)):
        parser = sub(name, fn, f"the {name} of a file")
        parser.add_argument("path")
        parser.add_argument("-c", "--bytes", type=int, default=DEFAULT_HEAD_BYTES)
    put = sub("put", put_file, "upload a local file")
    put.add_argument("local", type=Path)
    put.add_argument("path")
    rm = sub("rm", remove, "delete a file or directory")
    rm.add_argument("path")
    rm.add_argument("-R", "--recursive", action="store_true")
    mv = sub("mv", move, "rename a file or directory")
    mv.add_argument("path")
    mv.add_argument("dst")
    sub("mkdir", mkdir, "create a directory").add_argument("path")
    inv = sub("invalidate", invalidate, "drop cached metadata and pages")
    inv.add_argument("path")
    inv.add_argument("-R", "--recursive", action="store_true")
    ld = sub("load", load_path, "prewarm a file or prefix, with a progress bar")
    ld.add_argument("path")
    ld.add_argument("-R", "--recursive", action="store_true")
    ld.add_argument("--include", action="append", default=[])
    ld.add_argument("--exclude", action="append", default=[])


def _run(fn: Callable[[WorkerCalls, argparse.Namespace], int], args: argparse.Namespace) -> int:
    config = load(args)  # a configuration error is reported by run_guarded
    try:
        calls = WorkerCalls(config, args.worker)
    except ValueError as exc:  # a malformed worker address or client option
        print(f"dora fs {args.action}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        return fn(calls, args)
    except DoraError as exc:
        print(f"dora fs {args.action}: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    except BrokenPipeError:
        return 0


def ls(calls: WorkerCalls, args: argparse.Namespace) -> int:
    for entry in calls.call("GET", "/v1/list", path=args.path).json()["entries"]:
        when = datetime.datetime.fromtimestamp(entry["mtime_ns"] / 1e9).strftime(
            "%Y-%m-%d %H:%M:%S"
        )
        kind = "d" if entry["is_dir"] else "-"
        cached = 100 * entry["cached_bytes"] // entry["size"] if entry["size"] else 0
        print(f"{kind} {entry['size']:>14} {cached:>3}% {when}  {entry['uri']}")
    return 0


def stat(calls: WorkerCalls, args: argparse.Namespace) -> int:
    print(json.dumps(calls.call("GET", "/v1/status", path=args.path).json(), indent=2))
    return 0


def _write_out(chunks: Iterator[bytes]) -> int:
    for chunk in chunks:
        sys.stdout.buffer.write(chunk)
    sys.stdout.buffer.flush()
    return 0


def cat(calls: WorkerCalls, args: argparse.Namespace) -> int:
    return _write_out(calls.stream("/v1/read", path=args.path))


def head(calls: WorkerCalls, args: argparse.Namespace) -> int:
    return _write_out(calls.stream("/v1/read", path=args.path, offset=0, length=args.bytes))


def tail(calls: WorkerCalls, args: argparse.Namespace) -> int:
    size = calls.call("GET", "/v1/status", path=args.path).json()["size"]
    offset = max(0, size - args.bytes)
    return _write_out(calls.stream("/v1/read", path=args.path, offset=offset))


def put_file(calls: WorkerCalls, args: argparse.Namespace) -> int:
    with args.local.open("rb") as handle:
        try:
            response = calls.http.put("/v1/write", params={"path": args.path}, content=handle)
        except httpx.TransportError as exc:
            raise WorkerUnavailable(f"upload to {calls.base} failed: {exc}") from exc
    print(json.dumps(calls.checked(response, "PUT /v1/write").json(), indent=2))
    return 0


def remove(calls: WorkerCalls, args: argparse.Namespace) -> int:
    calls.call("DELETE", "/v1/delete", path=args.path, recursive=str(args.recursive).lower())
    return 0


def move(calls: WorkerCalls, args: argparse.Namespace) -> int:
    calls.call("POST", "/v1/rename", src=args.path, dst=args.dst)
    return 0


def mkdir(calls: WorkerCalls, args: argparse.Namespace) -> int:
    calls.call("POST", "/v1/mkdir", path=args.path)
    return 0


def invalidate(calls: WorkerCalls, args: argparse.Namespace) -> int:
    answer = calls.call(
        "POST", "/v1/invalidate", path=args.path, recursive=str(args.recursive).lower()
    )
    print(f"invalidated {answer.json()['invalidated']} entries")
    return 0


def load_path(calls: WorkerCalls, args: argparse.Namespace) -> int:
    job = calls.call(
        "POST",
        "/v1/load",
        path=args.path,
        recursive=str(args.recursive).lower(),
        include=",".join(args.include) or None,
        exclude=",".join(args.exclude) or None,
    ).json()
    while job["state"] in ("queued", "running"):
        _progress(job)
        time.sleep(0.3)
        job = calls.call("GET", f"/v1/load/{job['id']}").json()
    _progress(job)
    print(file=sys.stderr)
    for error in job["errors"]:
        print(f"  error: {error}", file=sys.stderr)
    return 0 if job["state"] == "done" and not job["files_failed"] else EXIT_FAILURE


def _progress(job: dict[str, Any]) -> None:
    total, done = job["bytes_total"], job["bytes_done"]
    fraction = (
        done / total if total else (1.0 if job["state"] not in ("queued", "running") else 0.0)
    )
    bar = "#" * int(30 * fraction)
    print(
        f"\r[{bar:<30}] {100 * fraction:5.1f}%  {job['files_done']}/{job['files_total']} files  "
        f"{done / 2**20:.1f}/{total / 2**20:.1f} MiB  {job['state']}",
        end="",
        file=sys.stderr,
        flush=True,
    )
