"""``dora cluster ls``: the cluster's workers as etcd knows them."""

from __future__ import annotations

import argparse
import json
import sys

from worker.cli.common import config_options, load
from worker.common import client_keys

EXIT_UNAVAILABLE = 1
EXIT_USAGE = 2


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    cluster = commands.add_parser("cluster", help="the workers of an etcd cluster")
    actions = cluster.add_subparsers(dest="action", required=True)
    listing = actions.add_parser(
        "ls",
        parents=[config_options()],
        help="workers (online or not), their feed revision lag and capacity",
    )
    listing.add_argument("--json", action="store_true", help="print JSON instead of a table")
    listing.set_defaults(handler=list_workers)


def list_workers(args: argparse.Namespace) -> int:
    # The etcd client only for this command: every other `dora` command starts without it.
    from worker.cluster.etcd import EtcdError, EtcdUnavailable
    from worker.cluster.status import format_table
    from worker.cluster.view import ClusterView

    config = load(args)
    endpoints: list[str] = config.get(client_keys.ETCD_ENDPOINTS)
    if not endpoints:
        print(
            f"dora: {client_keys.ETCD_ENDPOINTS.name} is not set: there is no cluster to list",
            file=sys.stderr,
        )
        return EXIT_USAGE
    # The view /v1/cluster and WebHDFS locality read the cluster through, for one answer.
    view = ClusterView.from_config(config)
    try:
        status = view.status()
    except (EtcdUnavailable, EtcdError) as exc:
        print(f"dora: {exc}", file=sys.stderr)
        return EXIT_UNAVAILABLE
    finally:
        view.close()
    print(json.dumps(status.to_dict(), indent=2) if args.json else format_table(status))
    return 0
