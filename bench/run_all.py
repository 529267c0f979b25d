"""``make bench`` / ``make bench-quick``: the benchmarks, one after another, each in its own
process so one's memory and threads don't skew the next. Figures go to stdout; the side-by-side
suite also writes its result file and renders bench/RESULTS.md and the plots from it.

    .venv/bin/python -m bench.run_all            # everything (make bench)
    .venv/bin/python -m bench.run_all --quick    # side-by-side, reduced (make bench-quick)

Other options go to ``python -m bench.side`` (``make bench-quick BENCH_ARGS="--label ..."``).
One-off experiments (``bench/experiments/``) are not run here; each runs alone as
``python -m bench.experiments.X``.
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys

FULL = (
    ["bench.side", "--render"],
    ["bench.meta_bench"],
    ["bench.pagestore_bench"],
    ["bench.warm_bench"],
    ["bench.cluster_bench"],
    ["bench.feed_bench"],
    ["bench.feed_load_bench"],
    ["bench.feed_calls_bench"],
    ["bench.serve_stale_bench"],
    ["bench.load_bench"],
    ["bench.spark_bench"],
    ["bench.console_bench"],
    ["bench.webhdfs_listing_bench"],
    ["bench.lab_bench"],
    ["bench.lab_pipeline_bench"],
    ["bench.import_bench"],
)
QUICK = (["bench.side", "--quick", "--render"],)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="the reduced side-by-side run only")
    args, side_args = parser.parse_known_args()
    failed = []
    for base in QUICK if args.quick else FULL:
        # Options run_all does not know (--label, --profile, ...) are the side-by-side suite's.
        module = [*base, *side_args] if base[0] == "bench.side" else base
        if importlib.util.find_spec(module[0]) is None:
            print(f"\n=== {module[0]}: not in this checkout, skipped", flush=True)
            continue
        print(f"\n=== python -m {' '.join(module)}", flush=True)
        if subprocess.run([sys.executable, "-m", *module], check=False).returncode != 0:
            failed.append(module[0])
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
