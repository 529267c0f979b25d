"""Pieces every ``dora`` command shares: ``--conf`` and ``-Dkey=value`` options, loading the
effective configuration, and turning errors into one clear line and a non-zero exit."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable

from config import Config, ConfigError, load_config
from worker.keys import build_registry

log = logging.getLogger(__name__)
EXIT_USAGE = 2
EXIT_FAILURE = 1


def config_options() -> argparse.ArgumentParser:
    """A parent parser with ``--conf FILE`` and repeatable ``-Dkey=value``."""
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument("--conf", metavar="FILE", help="site properties file")
    parent.add_argument(
        "-D",
        dest="defines",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="set a property (highest precedence after per-call options)",
    )
    return parent


def load(args: argparse.Namespace) -> Config:
    """The effective configuration for this command's ``--conf`` and ``-D`` options; what
    loading warns about (a secret other local users can read) is logged once, here."""
    config = load_quietly(args)
    warn_about(config)
    return config


def load_quietly(args: argparse.Namespace) -> Config:
    """:func:`load` without logging the warnings: for a command that sets up its logging from
    the configuration first, then calls :func:`warn_about`."""
    return load_config(build_registry(), conf_file=args.conf, defines=args.defines)


def warn_about(config: Config) -> None:
    """Log what loading ``config`` warned about."""
    for warning in config.warnings:
        log.warning(warning)


def run_guarded(fn: Callable[[], int]) -> int:
    """Run a command; a configuration error is one line on stderr and exit status 2."""
    try:
        return fn()
    except ConfigError as exc:
        print(f"dora: {exc}", file=sys.stderr)
        return EXIT_USAGE
