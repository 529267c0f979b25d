"""The README and the topic pages under docs/ name only what exists: every ``make`` target in
the Makefile, every ``dora`` command in the command line's parser, every ``dora.*`` property key
in the key registry (what ``dora conf template`` prints), every relative link a file; and every
``python -m`` module they, bench/RESULTS.md and RELIABILITY.md run is there."""

import argparse
import importlib.util
import re
from pathlib import Path

import pytest

from worker.cli.main import build_parser
from worker.keys import build_registry

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

# Code as the pages show it: fenced blocks, indented blocks and `spans`.
FENCED = re.compile(r"^```[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
INDENTED = re.compile(r"(?:^(?: {4}|\t)[^\n]*\n)+", re.MULTILINE)
SPAN = re.compile(r"`([^`\n]+)`")
MAKE = re.compile(r"(?<![\w-])make ([a-z][\w-]*)")
DORA = re.compile(r"(?<![\w./:-])dora ([a-z][\w-]*)(?: ([a-z][\w-]*))?")
KEY = re.compile(r"(?<![\w.])dora\.[a-z][\w.-]*[\w*]|(?<![\w.])dora\.[a-z][\w-]*\.(?=\*)")
MODULE = re.compile(r"python -m ([A-Za-z_][\w.]*[\w])")
LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)\s]*)?\)")


def code(page: Path) -> str:
    text = page.read_text()
    blocks = FENCED.findall(text) + INDENTED.findall(FENCED.sub("", text))
    return "\n".join([*blocks, *SPAN.findall(text)])


def make_targets() -> set[str]:
    makefile = (ROOT / "Makefile").read_text()
    return set(re.findall(r"^([A-Za-z][\w.-]*)\s*:(?!=)", makefile, re.MULTILINE))


def commands() -> dict[str, set[str]]:
    """Each ``dora`` command and the subcommands it has (empty for a leaf)."""
    found: dict[str, set[str]] = {}
    for action in build_parser()._subparsers._group_actions:  # type: ignore[union-attr]
        assert isinstance(action, argparse._SubParsersAction)
        for name, parser in action.choices.items():
            subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
            found[name] = {n for a in subs for n in a.choices}
    return found


def key_known(key: str, names: set[str]) -> bool:
    """A key, or a family of keys (``dora.user.*``, or its prefix ``dora.user``), that exists."""
    prefix = key.rstrip("*").rstrip(".") + "."
    return key in names or any(name.startswith(prefix) for name in names)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_make_target_named_exists(page: Path) -> None:
    targets = make_targets()
    unknown = sorted(set(MAKE.findall(code(page))) - targets)
    assert not unknown, f"{page.name} names make targets the Makefile lacks: {unknown}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_dora_command_named_exists(page: Path) -> None:
    known = commands()
    wrong = []
    for match in DORA.finditer(code(page)):
        command, sub = match.group(1), match.group(2)
        if command not in known or (
            known[command] and sub is not None and sub not in known[command]
        ):
            wrong.append(match.group(0))
    assert not wrong, f"{page.name} names dora commands the command line lacks: {wrong}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_property_key_named_exists(page: Path) -> None:
    names = {key.name for key in build_registry()}
    named = set(KEY.findall(page.read_text()))
    unknown = sorted(key for key in named if not key_known(key, names))
    assert not unknown, f"{page.name} names keys `dora conf template` lacks: {unknown}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_relative_link_is_a_file(page: Path) -> None:
    targets = [t for t in LINK.findall(page.read_text()) if not re.match(r"^[a-z]+:", t)]
    missing = [t for t in targets if not (page.parent / t).exists()]
    assert not missing, f"{page.name} links to files that do not exist: {missing}"


@pytest.mark.parametrize(
    "page", [*PAGES, ROOT / "bench" / "RESULTS.md", ROOT / "RELIABILITY.md"], ids=lambda p: p.name
)
def test_every_module_run_with_python_m_exists(page: Path) -> None:
    named = set(MODULE.findall(page.read_text()))
    missing = sorted(name for name in named if importlib.util.find_spec(name) is None)
    assert not missing, f"{page.name} runs modules that do not exist: {missing}"


def test_a_made_up_name_of_each_kind_is_caught() -> None:
    assert "no-such-target" not in make_targets()
    assert "no-such-command" not in commands()
    assert not key_known("dora.no.such.key", {key.name for key in build_registry()})
    assert importlib.util.find_spec("bench.no_such_bench") is None
