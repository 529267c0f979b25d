"""``dora conf``: show the effective configuration."""

from __future__ import annotations

import argparse
import sys

from config.template import render_template
from ufs import uri as uris
from ufs.errors import UfsInvalidPath
from worker.cli.common import EXIT_USAGE, config_options, load
from worker.keys import build_registry
from worker.rules.keys import PATH_CONF, RULES_FILE
from worker.rules.live import Rules


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    conf = commands.add_parser("conf", help="show the effective configuration")
    actions = conf.add_subparsers(dest="action", required=True)
    listing = actions.add_parser(
        "list", parents=[config_options()], help="every effective value (secrets masked)"
    )
    listing.add_argument(
        "--show-source", action="store_true", help="say where each value came from"
    )
    listing.set_defaults(handler=list_values)
    get = actions.add_parser("get", parents=[config_options()], help="one effective value")
    get.add_argument("key")
    get.set_defaults(handler=get_value)
    paths = actions.add_parser(
        "paths",
        parents=[config_options()],
        help=f"the path rules ({RULES_FILE.name}, {PATH_CONF.name}, the include/exclude "
        "globs) in precedence order; with a URI, what applies to it and which rule says so",
    )
    paths.add_argument("uri", nargs="?", help="show the settings that apply to this URI")
    paths.set_defaults(handler=show_paths)
    template = actions.add_parser("template", help="print dora-site.properties.template")
    template.set_defaults(handler=print_template)


def list_values(args: argparse.Namespace) -> int:
    config = load(args)
    for setting in config.settings():
        line = f"{setting.key.name}={setting.shown()}"
        if args.show_source:
            origin = f": {setting.origin}" if setting.origin else ""
            line += f"  ({setting.source.value}{origin})"
        print(line)
    return 0


def get_value(args: argparse.Namespace) -> int:
    config = load(args)
    print(config.setting(args.key).shown())
    return 0


def show_paths(args: argparse.Namespace) -> int:
    config = load(args)
    try:
        rules = Rules.from_config(config)
        lines = rules.explain(uris.normalize(args.uri)) if args.uri else rules.describe()
    except UfsInvalidPath as exc:
        print(f"dora: {exc}", file=sys.stderr)
        return EXIT_USAGE
    for line in lines:
        print(line)
    return 0


def print_template(args: argparse.Namespace) -> int:
    print(render_template(build_registry()), end="")
    return 0
