"""The ``dora`` command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from importlib import metadata

from worker.cli import cache, cluster, conf, fs, worker_cmd
from worker.cli.common import run_guarded
from worker.devlab.demo import cli as demo_cli


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dora", description="doracache: a per-host cache agent for data pipelines"
    )
    parser.add_argument(
        "--version", action="version", version=f"%(prog)s {metadata.version('doracache')}"
    )
    commands = parser.add_subparsers(dest="command", required=True)
    conf.add_parser(commands)
    worker_cmd.add_parser(commands)
    fs.add_parser(commands)
    demo_cli.add_parser(commands)
    cluster.add_parser(commands)
    cache.add_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    return run_guarded(lambda: int(args.handler(args)))


if __name__ == "__main__":
    sys.exit(main())
