"""``dora cache advise``: the page store a target hit ratio needs, from each worker's miss-ratio
curve (``GET /v1/cache/advice``)."""

from __future__ import annotations

import argparse
import json
import sys
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


def _ratio(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"{text} is not in (0, 1]")
    return value


def advise_capacity(args: argparse.Namespace) -> int:
    config = load(args)
    try:
        workers = [args.worker] if args.worker else list(ClientOptions.resolve(config).workers)
    except ValueError as exc:
        print(f"dora cache advise: {exc}", file=sys.stderr)
        return EXIT_USAGE
    status = 0
    for worker in workers:
        try:
            calls = WorkerCalls(config, worker)
        except ValueError as exc:
            print(f"dora cache advise: {exc}", file=sys.stderr)
            return EXIT_USAGE
        try:
            answer = calls.call("GET", "/v1/cache/advice", {"target_hit": str(args.target_hit)})
        except DoraError as exc:
            print(f"dora cache advise: {exc}", file=sys.stderr)
            status = EXIT_FAILURE
            continue
        finally:
            calls.close()
        print(
            json.dumps({"worker": worker, **answer}) if args.json else advice_text(worker, answer)
        )
    return status


def advice_text(worker: str, answer: dict[str, Any]) -> str:
    """A worker's advice as lines for a person."""
    target = answer["target_hit"]
    lines = [
        f"{worker}: {answer['references']} page reads seen since start, "
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
