"""Paging a large directory over WebHDFS: ``LISTSTATUS_BATCH`` (1,000 entries a call, as Hadoop's
client pages) against one ``LISTSTATUS`` of the same directory, through a real worker process.

Run with ``.venv/bin/python -m bench.webhdfs_listing_bench`` (``--entries``, ``--repeat``).
Builds a local root with one directory of ``--entries`` empty files, starts ``dora worker
start`` over it, and measures, ``--repeat`` times each after one warm-up (median, min-max):
one LISTSTATUS, and every batch of LISTSTATUS_BATCH from the first to the last; each with
the listing cached (the default sync interval) and re-checked (``sync_interval=0``: the UFS
is listed again for each listing, and, before the batches continued one listing, per batch).
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Callable
from functools import partial
from pathlib import Path

import httpx

from bench.experiments.roots_bench import report, timed
from bench.side.services import WorkerProcess


def list_once(client: httpx.Client, path: str, params: dict[str, str]) -> int:
    answer = client.get(path, params={"op": "LISTSTATUS", **params}).json()
    return len(answer["FileStatuses"]["FileStatus"])


def page_all(client: httpx.Client, path: str, params: dict[str, str]) -> int:
    total, after = 0, None
    while True:
        query = {"op": "LISTSTATUS_BATCH", **params, **({"startAfter": after} if after else {})}
        listing = client.get(path, params=query).json()["DirectoryListing"]
        entries = listing["partialListing"]["FileStatuses"]["FileStatus"]
        total += len(entries)
        if not listing["remainingEntries"]:
            return total
        after = entries[-1]["pathSuffix"]


def checked(fn: Callable[[], int], entries: int) -> Callable[[], int]:
    """``fn``, once checked to list every entry."""
    assert fn() == entries
    return fn


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--entries", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as base:
        root = Path(base, "root")
        (root / "dir").mkdir(parents=True)
        for index in range(args.entries):
            (root / "dir" / f"part-{index:06d}").touch()
        worker = WorkerProcess(Path(base, "work"), [f"dora.worker.ufs.roots=file://{root}"])
        try:
            with httpx.Client(base_url=f"http://{worker.address}", timeout=600) as client:
                path = f"/webhdfs/v1/file{root}/dir"
                for label, params in (("cached", {}), ("sync_interval=0", {"sync_interval": "0"})):
                    for name, fn in (("LISTSTATUS", list_once), ("LISTSTATUS_BATCH", page_all)):
                        call = checked(partial(fn, client, path, params), args.entries)
                        what = f"{name} {label}, {args.entries} entries"
                        report(what, timed(call, args.repeat), 1, "s")
        finally:
            worker.stop()


if __name__ == "__main__":
    main()
