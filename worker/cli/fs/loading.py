"""``dora fs load``: have the worker that owns a path prewarm it (metadata and pages, a whole
prefix with ``-R``), following the job's progress."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from worker.cli.fs.progress import progress_line
from worker.cli.fs.session import Session, uri
from worker.cli.rest import WorkerCalls

POLL_S = 0.3


def load_path(session: Session, args: argparse.Namespace) -> int:
    """Start a load job on the owner of the path and follow it: a progress line redrawn on a
    terminal, the final state in any case, then each failed file. Exit 1 if any failed."""
    path = uri(session.fs, args.path)
    params = {"path": path, "recursive": "true" if args.recursive else "false"}
    if args.include:
        params["include"] = ",".join(args.include)
    if args.exclude:
        params["exclude"] = ",".join(args.exclude)
    jobs = WorkerCalls(session.config, session.fs.worker_for(path))
    started, redraw = time.monotonic(), sys.stderr.isatty()
    try:
        job = jobs.call("POST", "/v1/load", params)
        while job["state"] in ("queued", "running"):
            if redraw:
                _show(job, time.monotonic() - started, redraw=True)
            time.sleep(POLL_S)
            job = jobs.call("GET", f"/v1/load/{job['id']}")
    finally:
        jobs.close()
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
