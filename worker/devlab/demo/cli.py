"""``dora demo``: the main job (``make demo``) on an embedded default."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from config import Source
from config.units import parse_duration
from worker.cli.common import config_options, load
from worker.devlab.demo.spec import DatasetSpec, default_work_dir

if TYPE_CHECKING:
    from worker.devlab.demo.outside import OutsideReport
    from worker.devlab.demo.report import DemoProgress
    from worker.devlab.demo.run import DemoOptions

EXIT_MISMATCH = 1
EXIT_INTERRUPTED = 130


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    demo = commands.add_parser(
        "demo",
        help="run a PySpark pipeline four ways side by side: cold, warm, after a change",
        description=__doc__,
        parents=[config_options()],
    )
    configure(demo)


def configure(parser: argparse.ArgumentParser) -> None:
    """The demo's options on ``parser``."""
    defaults = DatasetSpec()
    parser.add_argument("--files", type=_positive, default=defaults.files, help="Parquet files")
    parser.add_argument(
        "--rows-per-file", type=_positive, default=defaults.rows_per_file, help="trips per file"
    )
    parser.add_argument("--seed", type=int, default=defaults.seed, help="dataset seed")
    parser.add_argument(
        "--ufs",
        default="s3",
        metavar="s3|file:///DIR",
        help="under storage: a local S3 server (default) or a local directory",
    )
    parser.add_argument(
        "--ufs-latency",
        type=_latency,
        default=0,
        metavar="DURATION",
        help="round trip added between the worker and the S3 UFS, such as 20ms (default: none)",
    )
    parser.add_argument(
        "--work-dir",
        type=Path,
        default=default_work_dir(),
        help="where datasets are cached and runs keep their state (default: %(default)s)",
    )
    parser.add_argument("--cores", type=_positive, default=2, help="Spark local cores")
    parser.add_argument(
        "--workers",
        type=_positive,
        default=1,
        help="with 2 or more, then also run that many workers as one cache through a local etcd",
    )
    parser.add_argument(
        "--hosts",
        type=_positive,
        default=1,
        help="with 2 or more, run the pipeline instead on a Spark standalone cluster across that "
        "many emulated hosts (network namespaces: needs root), a worker on each",
    )
    parser.set_defaults(handler=run)


def _latency(text: str) -> int:
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"--ufs-latency {text!r}: {exc}") from None


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, not {text!r}")
    return value


def run(args: argparse.Namespace) -> int:
    """Run the demo and print its table; exit status 1 if any answer differs from the
    reference."""
    # Imported here: Spark, pyarrow and numpy are for the demo, not for every ``dora`` command.
    from worker.devlab.demo.report import DemoProgress, render
    from worker.devlab.demo.run import DemoOptions, run_demo

    spec = DatasetSpec(files=args.files, rows_per_file=args.rows_per_file, seed=args.seed)
    options = DemoOptions(
        spec=spec,
        ufs=args.ufs,
        ufs_latency_ms=args.ufs_latency,
        work_dir=args.work_dir,
        cores=args.cores,
        defines=_chosen_settings(args),
    )
    progress = DemoProgress()
    if args.hosts > 1:
        return _hosts_demo(options, args.hosts, progress)
    progress.say("doracache demo: taxi trips by pickup hour and zone, read four ways and by Polars")
    try:
        report = run_demo(options, progress)
    except KeyboardInterrupt:
        # run_demo has stopped everything it started by now.
        print("\ninterrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    progress.say("")
    progress.say(render(report.results))
    if not _outside_served(report.outside, progress):
        return EXIT_MISMATCH
    if getattr(args, "workers", 1) > 1 and not _cluster_demo(args, progress.say):
        return EXIT_MISMATCH
    if all(result.matches for result in report.results):
        progress.say("\nevery answer matches the direct read of the UFS")
        return 0
    print("\nsome answers differ from the direct read of the UFS", file=sys.stderr)
    return EXIT_MISMATCH


def _outside_served(outside: OutsideReport | None, progress: DemoProgress) -> bool:
    """Print the outside writes' section (if the UFS had a change feed); whether every worker
    served every outside write."""
    from worker.devlab.demo.outside import WAIT_S, render

    if outside is None:
        return True
    progress.say("")
    progress.say(render(outside))
    if not outside.served:
        print(f"\na worker did not serve an outside write within {WAIT_S:.0f} s", file=sys.stderr)
    return outside.served


def _hosts_demo(options: DemoOptions, hosts: int, progress: DemoProgress) -> int:
    from worker.devlab.demo.hosts import render_hosts, run_hosts_demo
    from worker.devlab.demo.report import render
    from worker.devlab.lab.netns import LabUnavailable, unavailable_reason

    reason = unavailable_reason()
    if reason is not None:
        print(f"dora demo --hosts: {reason}", file=sys.stderr)
        return EXIT_MISMATCH
    progress.say(f"doracache demo: taxi trips by pickup hour and zone, on {hosts} hosts")
    try:
        report = run_hosts_demo(options, hosts, progress)
    except LabUnavailable as exc:
        print(f"dora demo --hosts: {exc}", file=sys.stderr)
        return EXIT_MISMATCH
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    progress.say("")
    progress.say(render(report.results))
    progress.say("")
    progress.say(render_hosts(report))
    if not _outside_served(report.outside, progress):
        return EXIT_MISMATCH
    if all(result.matches for result in report.results):
        progress.say("\nevery answer matches the direct read of the files")
        return 0
    print("\nsome answers differ from the direct read of the files", file=sys.stderr)
    return EXIT_MISMATCH


def _cluster_demo(args: argparse.Namespace, say: Callable[[str], None]) -> bool:
    from worker.devlab.demo.cluster import run_cluster_demo

    say("")
    if run_cluster_demo(args.work_dir, args.workers, say):
        return True
    print("a worker served old bytes after a change made through another", file=sys.stderr)
    return False


def _chosen_settings(args: argparse.Namespace) -> tuple[str, ...]:
    """Settings the user chose (site file, environment, ``-D``), checked here so a misspelled
    key fails before any server starts, and handed to the demo's worker."""
    if not hasattr(args, "defines"):
        return ()
    config = load(args)
    return tuple(
        f"{setting.key.name}={setting.text}"
        for setting in config.settings()
        if setting.source is not Source.DEFAULT and setting.text is not None
    )


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m worker.devlab.demo``: the demo without the ``dora`` wrapper."""
    parser = argparse.ArgumentParser(prog="python -m worker.devlab.demo", description=__doc__)
    configure(parser)
    args = parser.parse_args(argv)
    return int(args.handler(args))
