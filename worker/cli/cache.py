"""``dora cache advise``: the page store a target hit ratio needs, from each worker's miss-ratio
curve (``GET /v1/cache/advice``); ``dora cache policy``: what each worker's cache policy did
(``GET /v1/overview``'s ``policy`` and quotas)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

from worker.cli.common import EXIT_FAILURE, EXIT_USAGE, config_options, load
from worker.cli.fs.formats import size_text
from worker.cli.rest import WorkerCalls
from worker.client import DoraError
from worker.client.options import ClientOptions

DESCRIPTION = """\
How much page store a target hit ratio needs, from what each worker has read since it started:
the hit ratio an LRU page store of any size would have had (a miss-ratio curve from sampled
page reads, SHARDS). With a scan-resistant evictor the worker keeps at least as much on most
workloads, so the capacity is an upper bound for it. Asks --worker, else every worker of
dora.user.workers. Exit status: 0 done, 1 a worker could not answer, 2 a usage error."""


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    cache = commands.add_parser("cache", help="what the workers' page caches need")
    actions = cache.add_subparsers(dest="action", required=True)
    advise = actions.add_parser(
        "advise",
        parents=[config_options()],
        help="the page store capacity a target hit ratio needs",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    advise.add_argument(
        "--target-hit",
        type=_ratio,
        default=0.9,
        metavar="RATIO",
        help="the hit ratio wanted, in (0, 1] (default 0.9)",
    )
    advise.add_argument("--worker", metavar="HOST:PORT", help="ask this worker only")
    advise.add_argument("--json", action="store_true", help="print each worker's answer as JSON")
    advise.set_defaults(handler=advise_capacity)
    policy = actions.add_parser(
        "policy",
        parents=[config_options()],
        help="what the cache policy did: admission, pass-through, TTL frees, pins, quotas",
        description=POLICY_DESCRIPTION,
    )
    policy.add_argument("--worker", metavar="HOST:PORT", help="ask this worker only")
    policy.add_argument("--json", action="store_true", help="print each worker's answer as JSON")
    policy.set_defaults(handler=policy_actions)


POLICY_DESCRIPTION = """\
What each worker's cache policy did since it started (docs/cache-policy.md): reads by
admission decision, reads served through, files freed by a TTL, pins and pinned bytes, and
each quota's bytes against its limit with the pages it evicted (GET /v1/overview). Asks
--worker, else every worker of dora.user.workers. Exit status: 0 done, 1 a worker could not
answer, 2 a usage error."""


def _ratio(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"{text} is not in (0, 1]")
    return value


def advise_capacity(args: argparse.Namespace) -> int:
    return _each_worker(
        args,
        "advise",
        "/v1/cache/advice",
        {"target_hit": str(args.target_hit)},
        advice_text,
    )


def policy_actions(args: argparse.Namespace) -> int:
    return _each_worker(
        args,
        "policy",
        "/v1/overview",
        {},
        policy_text,
        lambda answer: {"policy": answer["policy"], "quotas": answer["page_store"]["quotas"]},
    )


def _each_worker(
    args: argparse.Namespace,
    action: str,
    route: str,
    params: dict[str, str],
    text: Callable[[str, dict[str, Any]], str],
    pick: Callable[[dict[str, Any]], dict[str, Any]] = lambda answer: answer,
) -> int:
    """Ask --worker, or every worker, for ``route`` and print what ``pick`` keeps of each
    answer, as JSON (--json) or as ``text``."""
    config = load(args)
    try:
        workers = [args.worker] if args.worker else list(ClientOptions.resolve(config).workers)
    except ValueError as exc:
        print(f"dora cache {action}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    status = 0
    for worker in workers:
        try:
            calls = WorkerCalls(config, worker)
        except ValueError as exc:
            print(f"dora cache {action}: {exc}", file=sys.stderr)
            return EXIT_USAGE
        try:
            answer = pick(calls.call("GET", route, params))
        except DoraError as exc:
            print(f"dora cache {action}: {exc}", file=sys.stderr)
            status = EXIT_FAILURE
            continue
        finally:
            calls.close()
        print(json.dumps({"worker": worker, **answer}) if args.json else text(worker, answer))
    return status


def policy_text(worker: str, answer: dict[str, Any]) -> str:
    """What a worker's cache policy did, as lines for a person."""
    policy = answer["policy"]
    decisions = ", ".join(f"{n} {d.replace('_', ' ')}" for d, n in policy["admission"].items())
    lines = [
        f"{worker}: reads {decisions}; {policy['passthrough_reads']} served through",
        f"  ttl: {policy['ttl_frees']} files freed",
        f"  pins: {policy['pins']} made, {policy['unpins']} undone; pinned "
        f"{size_text(policy['pinned_bytes'], True)} of "
        f"{size_text(policy['pin_limit_bytes'], True)}",
        f"  quotas: {policy['quota_evictions']} pages evicted",
    ]
    for quota in answer["quotas"]:
        lines.append(
            f"    {quota['name']}: {size_text(quota['used_bytes'], True)} of "
            f"{size_text(quota['limit_bytes'], True)}, {quota['evictions']} evicted"
        )
    return "\n".join(lines)


def advice_text(worker: str, answer: dict[str, Any]) -> str:
    """A worker's advice as lines for a person."""
    target = answer["target_hit"]
    lines = [
        f"{worker}: {answer['references']} page reads in the curve (aged), "
        f"{answer['sampled']} sampled (rate {answer['sample_rate']:.3g}); "
        f"LRU's curve (the evictor is {answer['evictor']})"
    ]
    if not answer["references"]:
        lines.append("  no page read yet: nothing to advise")
        return "\n".join(lines)
    lines.append(
        f"  capacity now {size_text(answer['capacity_bytes'], True)}: "
        f"hit ratio {answer['hit_ratio_at_capacity']:.3f}"
    )
    needed = answer["capacity_needed_bytes"]
    if needed is None:
        lines.append(
            f"  target hit ratio {target:g}: out of reach, at most "
            f"{answer['max_hit_ratio']:.3f} (the other reads are first reads)"
        )
    else:
        lines.append(f"  target hit ratio {target:g}: needs {size_text(needed, True)} ({needed} B)")
    return "\n".join(lines)
