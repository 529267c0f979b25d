"""``make bench``: every benchmark, one after another, each in its own process so one's memory
and threads don't skew the next. Figures go to stdout; bench/RESULTS.md records them."""

from __future__ import annotations

import subprocess
import sys

BENCHMARKS = (
    ["bench.meta_bench"],
    ["bench.pagestore_bench"],
    ["bench.worker_bench"],
    ["bench.cluster_bench"],
)


def main() -> int:
    failed = []
    for module in BENCHMARKS:
        print(f"\n=== python -m {' '.join(module)}", flush=True)
        if subprocess.run([sys.executable, "-m", *module], check=False).returncode != 0:
            failed.append(module[0])
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
