"""``dora fs``: file operations through the workers, on the ``dora`` fsspec client (so each call
goes to the worker that owns the path). :mod:`worker.cli.fs.parser` wires the subcommands."""

from worker.cli.fs.parser import add_parser

__all__ = ["add_parser"]
