"""``dora fs load``: have the worker that owns a path prewarm it (metadata and pages, a whole
prefix with ``-R``), following the job's progress."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

import httpx

from worker.cli.fs.progress import progress_line
from worker.cli.fs.session import Session, uri
from worker.client.errors import WorkerUnavailable, error_from_response
from worker.client.options import ClientOptions
from worker.common.tls import refuse_plaintext

POLL_S = 0.3


class LoadJobs:
    """The ``/v1/load`` REST calls on one worker, with the client's token and timeout. Not
    thread-safe (one command at a time)."""

    def __init__(self, session: Session, worker: str) -> None:
        options = ClientOptions.resolve(session.config, workers=[worker])
        headers = {"Authorization": f"Bearer {options.token}"} if options.token else {}
        self.worker = worker
        if options.token:
            refuse_plaintext(options.workers[0], worker, options.allow_plaintext)
        self.http = httpx.Client(
            base_url=options.workers[0],
            headers=headers,
            timeout=options.timeout_s,
            verify=options.tls.context(),
        )

    def call(self, method: str, route: str, params: dict[str, str] | None = None) -> Any:
        """The JSON answer; DoraError for an error answer or an unreachable worker."""
        try:
            response = self.http.request(method, route, params=params)
        except httpx.TransportError as exc:
            raise WorkerUnavailable(f"{method} {route}: worker {self.worker}: {exc}") from exc
        if response.is_error:
            raise error_from_response(response, self.worker, f"{method} {route}")
        return response.json()


def load_path(session: Session, args: argparse.Namespace) -> int:
    """Start a load job on the owner of the path and follow it: a progress line redrawn on a
    terminal, the final state in any case, then each failed file. Exit 1 if any failed."""
    path = uri(session.fs, args.path)
    params = {"path": path, "recursive": "true" if args.recursive else "false"}
    if args.include:
        params["include"] = ",".join(args.include)
    if args.exclude:
        params["exclude"] = ",".join(args.exclude)
    jobs = LoadJobs(session, session.fs.worker_for(path))
    started, redraw = time.monotonic(), sys.stderr.isatty()
    try:
        job = jobs.call("POST", "/v1/load", params)
        while job["state"] in ("queued", "running"):
            if redraw:
                _show(job, time.monotonic() - started, redraw=True)
            time.sleep(POLL_S)
            job = jobs.call("GET", f"/v1/load/{job['id']}")
    finally:
        jobs.http.close()
    _show(job, time.monotonic() - started, redraw=redraw)
    if redraw:
        print(file=sys.stderr)
    for error in job["errors"]:
        print(f"  error: {error}", file=sys.stderr)
    return 0 if job["state"] == "done" and not job["files_failed"] else 1


def _show(job: dict[str, Any], seconds: float, *, redraw: bool) -> None:
    """The job's progress line: redrawn in place on a terminal, else one plain line."""
    line = progress_line(
        job["bytes_done"], job["bytes_total"], job["files_done"], job["files_total"], seconds
    )
    if redraw:
        print(f"\r{line}  {job['state']}\x1b[K", end="", file=sys.stderr, flush=True)
    else:
        print(f"{line}  {job['state']}", file=sys.stderr, flush=True)
