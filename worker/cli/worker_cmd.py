"""``dora worker start``: run a worker in the foreground."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from worker.cli.common import config_options, load
from worker.server import ProcessOptions, serve


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    worker = commands.add_parser("worker", help="run the cache worker")
    actions = worker.add_subparsers(dest="action", required=True)
    start = actions.add_parser(
        "start", parents=[config_options()], help="run a worker in the foreground"
    )
    start.add_argument("--state-file", type=Path, help="write pid/host/port here once listening")
    start.add_argument(
        "--owners-dir", type=Path, help="exit once no process named by a PID file here is alive"
    )
    start.set_defaults(handler=start_worker)


def start_worker(args: argparse.Namespace) -> int:
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    config = load(args)
    return serve(config, ProcessOptions(args.state_file, args.owners_dir))
