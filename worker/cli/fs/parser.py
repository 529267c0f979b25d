"""The ``dora fs`` command line: its subcommands and their options."""

from __future__ import annotations

import argparse
import logging

from worker.cli.common import config_options, load
from worker.cli.fs import copying, listing, loading, mutations, reading
from worker.cli.fs.session import Command, Session, execute

DESCRIPTION = """\
File operations through the workers, like `alluxio fs`, `aws s3` and `gsutil`. Paths in the
cache are full UFS URIs (s3://bucket/key, file:///data/x), also as dora://s3://bucket/key or
dora::s3://bucket/key; most commands take glob patterns ('s3://b/**/part-*.parquet'). Each call
goes to the worker that owns the path (dora.user.workers, or --worker HOST:PORT). Per-call
options go as -D too: dora fs ls s3://b/ -Ddora.user.file.metadata.sync.interval=0.
Exit status: 0 done, 1 an operation failed, 2 a usage or configuration error, 130 interrupted."""

DEFAULT_HEAD_BYTES = 1024


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``dora fs`` and its subcommands to ``commands``."""
    fs = commands.add_parser(
        "fs",
        help="file operations through the workers",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = fs.add_subparsers(dest="action", required=True, metavar="COMMAND")
    common = argparse.ArgumentParser(add_help=False, parents=[config_options()])
    common.add_argument("--worker", metavar="HOST:PORT", help="use this worker only")
    common.add_argument(
        "-v", "--verbose", action="store_true", help="log failovers and retries on stderr"
    )
    subcommands = _Subcommands(actions, common)
    _add_listing(subcommands)
    _add_reading(subcommands)
    _add_copying(subcommands)
    _add_mutations(subcommands)


def run(command: Command, args: argparse.Namespace) -> int:
    """Run ``command`` on a session built from the command line's configuration."""
    config = load(args)  # a configuration error is reported by run_guarded
    # The client logs failovers as warnings: without -v only the error itself is shown.
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.ERROR, format="dora fs: %(message)s"
    )
    return execute(args.action, lambda: command(Session.open(config, args.worker), args))


class _Subcommands:
    """Adds subcommands of ``dora fs``, each with the common options."""

    def __init__(
        self,
        actions: argparse._SubParsersAction[argparse.ArgumentParser],
        common: argparse.ArgumentParser,
    ) -> None:
        self.actions = actions
        self.common = common

    def __call__(
        self, name: str, command: Command, text: str, *, sizes: bool = False
    ) -> argparse.ArgumentParser:
        # -h means human-readable sizes where there are sizes, as in ls and du.
        parser = self.actions.add_parser(
            name, parents=[self.common], help=text, description=text, add_help=not sizes
        )
        if sizes:
            parser.add_argument("--help", action="help", help="show this help message and exit")
            parser.add_argument(
                "-h", "--human-readable", dest="human", action="store_true",
                help="sizes in B, KiB, MiB, GiB, ...",
            )  # fmt: skip
        parser.set_defaults(command=command, handler=lambda args: run(command, args))
        return parser


def _add_listing(sub: _Subcommands) -> None:
    ls = sub("ls", listing.ls, "list a directory, a file, or a pattern's matches", sizes=True)
    ls.add_argument("paths", nargs="+", metavar="PATH")
    _recursive(ls, "everything below each directory")
    sub("stat", listing.stat, "show statuses as JSON").add_argument(
        "paths", nargs="+", metavar="PATH"
    )
    du = sub("du", listing.du, "sizes and bytes cached, per child of a directory", sizes=True)
    du.add_argument("paths", nargs="+", metavar="PATH")
    du.add_argument("-s", "--summarize", dest="summary", action="store_true",
                    help="one total per path")  # fmt: skip
    find = sub("find", listing.find, "the URIs of everything below a path that matches")
    find.add_argument("paths", nargs="+", metavar="PATH")
    find.add_argument("--name", metavar="PATTERN", help="names matching this glob ('*.parquet')")
    find.add_argument("--type", choices=("f", "d"), help="files (f) or directories (d) only")
    find.add_argument("--maxdepth", type=_positive, metavar="N", help="at most N levels down")


def _add_reading(sub: _Subcommands) -> None:
    sub("cat", reading.cat, "write files to stdout").add_argument(
        "paths", nargs="+", metavar="PATH"
    )
    for name, command in (("head", reading.head), ("tail", reading.tail)):
        parser = sub(name, command, f"write the {name} of a file to stdout")
        parser.add_argument("path")
        parser.add_argument("-c", "--bytes", type=_count, default=DEFAULT_HEAD_BYTES,
                            help=f"bytes to show (default {DEFAULT_HEAD_BYTES})")  # fmt: skip


def _add_copying(sub: _Subcommands) -> None:
    cp = sub("cp", copying.cp, "copy local <-> cache or within the cache")
    cp.add_argument("sources", nargs="+", metavar="SOURCE")
    cp.add_argument("target", metavar="TARGET")
    get = sub("get", copying.get, "copy from the cache to local files")
    get.add_argument(
        "paths", nargs="+", metavar="PATH", help="SOURCE... [LOCAL] (default LOCAL: .)"
    )
    put = sub("put", copying.put, "copy local files into the cache")
    put.add_argument("sources", nargs="+", metavar="LOCAL")
    put.add_argument("target", metavar="TARGET")
    for parser in (cp, get, put):
        parser.description = f"{parser.description}.\n\n{copying.PLACEMENT}"
        parser.formatter_class = argparse.RawDescriptionHelpFormatter
        _recursive(parser, "copy directories and everything in them")
        parser.add_argument("-q", "--quiet", action="store_true",
                            help="no line per file, no progress")  # fmt: skip


def _add_mutations(sub: _Subcommands) -> None:
    rm = sub("rm", mutations.remove, "delete files or directories")
    rm.add_argument("paths", nargs="+", metavar="PATH")
    _recursive(rm, "delete directories and everything in them")
    mv = sub("mv", mutations.move, "rename a file or directory")
    mv.add_argument("source", metavar="SOURCE")
    mv.add_argument("target", metavar="TARGET")
    sub("mkdir", mutations.mkdir, "create directories").add_argument(
        "paths", nargs="+", metavar="PATH"
    )
    sub("touch", mutations.touch, "create empty files (an existing one is left as it is)")\
        .add_argument("paths", nargs="+", metavar="PATH")  # fmt: skip
    inv = sub("invalidate", mutations.invalidate, "drop cached metadata and pages")
    inv.add_argument("path")
    _recursive(inv, "everything below the path too")
    free = sub("free", mutations.free, "free a path's cached pages and metadata (store untouched)")
    free.add_argument("path")
    _recursive(free, "everything below the path too")
    pin = sub("pin", mutations.pin, "pin a file's pages (a directory's with -R): never evicted")
    pin.add_argument("path")
    _recursive(pin, "everything below the path, stored now or later")
    unpin = sub("unpin", mutations.unpin, "drop a pin: the pages become evictable")
    unpin.add_argument("path")
    _recursive(unpin, "every pin below the path too")
    ld = sub("load", loading.load_path, "prewarm a file or prefix, with a progress line")
    ld.add_argument("path")
    _recursive(ld, "everything below the path")
    ld.add_argument("--include", action="append", default=[], metavar="GLOB")
    ld.add_argument("--exclude", action="append", default=[], metavar="GLOB")


def _recursive(parser: argparse.ArgumentParser, text: str) -> None:
    parser.add_argument("-R", "-r", "--recursive", action="store_true", help=text)


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a number of bytes, 0 or more")
    return value


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a number, 1 or more")
    return value
