"""Mount-root checks on local files: ``MountRoots.check`` (every request) and
``MountRoots.visible`` (every listing, every directory a load job walks).

Run with ``.venv/bin/python -m bench.experiments.roots_bench`` (``--entries``, ``--links``,
``--repeat``).
Builds a local root with one directory of ``--entries`` entries, ``--links`` of them symlinks
(half leading inside the root, half outside), lists it through the local backend, then
measures, ``--repeat`` times each (median, min-max):
- the listing itself (``Ufs.list`` of the local directory), for scale;
- ``visible()`` of the whole listing (ms per listing, and µs per entry);
- ``check()`` of every entry's URI, one call each (µs per call);
- the primitives a check can be built from, per call: ``uris.normalize``, the kernel's
  resolution (``ufs.local.resolve``: an ``O_PATH`` descriptor named through /proc),
  ``os.path.realpath``, ``os.lstat`` and ``os.stat`` of the path, and ``os.lstat`` of the
  name relative to a descriptor of its directory (what ``visible`` pays per plain entry).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from ufs import uri as uris
from ufs.adapter import Ufs
from ufs.local import resolve
from ufs.roots import MountRoots


def build(base: Path, entries: int, links: int) -> Path:
    """``base/root/dir`` with ``entries`` entries, ``links`` of them symlinks; ``base/outside``
    next to the root."""
    directory, outside = base / "root" / "dir", base / "outside"
    directory.mkdir(parents=True)
    outside.mkdir()
    (outside / "secret").write_bytes(b"secret")
    for index in range(entries - links):
        (directory / f"part-{index:05d}.parquet").write_bytes(b"x")
    for index in range(links):
        target = directory / "part-00000.parquet" if index % 2 else outside / "secret"
        (directory / f"link-{index:05d}").symlink_to(target)
    return directory


def timed(fn: Callable[[], object], repeat: int) -> list[float]:
    """Seconds per call of ``fn``, ``repeat`` times (after one warm-up call)."""
    fn()
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - start)
    return runs


def report(what: str, runs: list[float], scale: float, unit: str) -> None:
    values = [run * scale for run in runs]
    print(
        f"{what:<46} median {statistics.median(values):9.2f} {unit}"
        f"   (min {min(values):.2f}, max {max(values):.2f}, {len(values)} runs)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--entries", type=int, default=1000)
    parser.add_argument("--links", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="roots-bench-") as temp:
        directory = build(Path(temp), args.entries, args.links)
        roots = MountRoots([f"file://{temp}/root"])
        listing_uri = f"file://{directory}"
        listing = Ufs().list(listing_uri)
        entry_uris = [entry.uri for entry in listing]
        paths = [str(directory / entry.name) for entry in listing]
        shown = len(roots.visible(listing))
        print(f"{len(listing)} entries, {args.links} links, {shown} visible")

        ufs = Ufs()
        report(
            "Ufs.list(dir), per listing",
            timed(lambda: ufs.list(listing_uri), args.repeat),
            1e3,
            "ms",
        )
        runs = timed(lambda: roots.visible(listing), args.repeat)
        report("visible(listing), per listing", runs, 1e3, "ms")
        report("visible(listing), per entry", runs, 1e6 / len(listing), "µs")

        def check_all() -> None:
            for uri in entry_uris:
                # A link leading outside is refused: that is measured too.
                with contextlib.suppress(PermissionError):
                    roots.check(uri)

        report("check(uri), per call", timed(check_all, args.repeat), 1e6 / len(entry_uris), "µs")
        fd = os.open(directory, os.O_PATH | os.O_DIRECTORY)
        primitives: dict[str, tuple[Callable[[str], object], list[str]]] = {
            "uris.normalize(uri)": (uris.normalize, entry_uris),
            "resolve(path) (O_PATH + /proc)": (resolve, paths),
            "os.path.realpath(path)": (os.path.realpath, paths),
            "os.lstat(path)": (os.lstat, paths),
            "os.stat(path)": (os.stat, paths),
            "os.lstat(name, dir_fd=directory)": (
                lambda name: os.lstat(name, dir_fd=fd),
                [entry.name for entry in listing],
            ),
        }
        try:
            for what, (primitive, inputs) in primitives.items():

                def each(
                    primitive: Callable[[str], object] = primitive, inputs: list[str] = inputs
                ) -> None:
                    for text in inputs:
                        primitive(text)

                report(f"{what}, per call", timed(each, args.repeat), 1e6 / len(inputs), "µs")
        finally:
            os.close(fd)


if __name__ == "__main__":
    main()
