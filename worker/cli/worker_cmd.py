"""``dora worker start``: run a worker in the foreground."""

from __future__ import annotations

import argparse
from pathlib import Path

from config import ConfigError
from worker import logs
from worker.cli.common import config_options, load_quietly, warn_about


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
    start.add_argument(
        "--log-format",
        choices=logs.FORMATS,
        help=f"text, or json: one object per line (default: {logs.LOG_FORMAT.name})",
    )
    start.set_defaults(handler=start_worker)


def start_worker(args: argparse.Namespace) -> int:
    # The server's packages only here: `dora fs` and the client need none of them, and a
    # client-only install (`pip install doracache`) has none.
    try:
        from worker.server import ProcessOptions, serve
    except ImportError as exc:
        raise ConfigError(
            f"dora worker start needs the worker's packages ({exc.name} is missing): "
            "pip install 'doracache[worker]'"
        ) from None
    config = load_quietly(args)
    logs.configure(args.log_format or config.get(logs.LOG_FORMAT))
    warn_about(config)
    return serve(config, ProcessOptions(args.state_file, args.owners_dir))
