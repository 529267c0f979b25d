"""``dora cluster ls``: the cluster's workers as etcd knows them."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from config import Config
from worker.cli.common import config_options, load
from worker.cluster import keys as cluster_keys
from worker.cluster.etcd import Etcd, EtcdError, EtcdUnavailable
from worker.cluster.status import ClusterStatus, cluster_status, format_table
from worker.tls.client import etcd_files

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
    config = load(args)
    endpoints: list[str] = config.get(cluster_keys.ETCD_ENDPOINTS)
    if not endpoints:
        print(
            f"dora: {cluster_keys.ETCD_ENDPOINTS.name} is not set: there is no cluster to list",
            file=sys.stderr,
        )
        return EXIT_USAGE
    etcd = Etcd(endpoints, _timeout_s(config), etcd_files(config))
    try:
        status = cluster_status(etcd, config.get(cluster_keys.CLUSTER_NAME))
    except (EtcdUnavailable, EtcdError) as exc:
        print(f"dora: {exc}", file=sys.stderr)
        return EXIT_UNAVAILABLE
    finally:
        etcd.close()
    print(json.dumps(_as_json(status), indent=2) if args.json else format_table(status))
    return 0


def _timeout_s(config: Config) -> float:
    timeout_ms: int = config.get(cluster_keys.ETCD_TIMEOUT)
    return timeout_ms / 1000


def _as_json(status: ClusterStatus) -> dict[str, Any]:
    return {
        "cluster": status.name,
        "feed_revision": status.feed_revision,
        "workers": [
            {
                "id": m.id,
                "address": m.info.name,
                "online": m.online,
                "applied_revision": m.applied,
                "lag": m.lag,
                "capacity_bytes": m.info.capacity_bytes,
                "started_ms": m.info.started_ms,
            }
            for m in status.members
        ],
    }
