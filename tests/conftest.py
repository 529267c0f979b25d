"""Options and markers for every test.

- ``--soak`` runs the long versions of the reliability scenarios (``make soak``); without it
  they run short (``make test``). Tests read it through the ``soak`` fixture;
  ``--soak-seconds N`` sets how long a timed soak scenario runs (``soak_seconds``), and
  ``--soak-tracemalloc FRAMES`` has the mixed load's worker trace its allocations.
- Markers: ``integration`` (real servers: every test under ``tests/integration/`` carries it)
  and ``reliability`` (the scenarios under ``tests/reliability/``). The fast lane
  (``make test-fast``) deselects both.
- ``umask_000``: the test runs (and starts processes) under umask 000, the most permissive;
  ``writable_by_others`` then finds what was created without an explicit mode.
- Figures: a reliability test reports what it measured with the ``figure`` fixture; they are
  printed at the end of the run, for RELIABILITY.md.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

Figure = tuple[str, str, float, str]
FIGURES = pytest.StashKey[list[Figure]]()
INTEGRATION_DIR = Path(__file__).parent / "integration"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--soak",
        action="store_true",
        default=False,
        help="run the long (soak) versions of the reliability scenarios",
    )
    parser.addoption(
        "--soak-seconds",
        type=float,
        default=None,
        help="with --soak, how long a timed scenario runs (the mixed load's 600 s)",
    )
    parser.addoption(
        "--soak-tracemalloc",
        type=int,
        default=0,
        metavar="FRAMES",
        help="with --soak, the mixed load's worker traces its Python allocations (tracemalloc, "
        "FRAMES frames each) and the run reports the sites that grew most (slows it down)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "reliability: a reliability scenario with real processes and faults; short by default, "
        "long with --soak",
    )
    config.stash[FIGURES] = []


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.is_relative_to(INTEGRATION_DIR):
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def soak(pytestconfig: pytest.Config) -> bool:
    """Whether this run is a soak (``--soak``): scenarios pick their long sizes."""
    return bool(pytestconfig.getoption("--soak"))


@pytest.fixture(scope="session")
def soak_seconds(pytestconfig: pytest.Config) -> float | None:
    """``--soak-seconds``: how long a timed soak scenario runs, None for its own length."""
    seconds: float | None = pytestconfig.getoption("--soak-seconds")
    return seconds


@pytest.fixture(scope="session")
def soak_tracemalloc(pytestconfig: pytest.Config) -> int:
    """``--soak-tracemalloc``: frames a soak's worker keeps per traced allocation, 0: none."""
    return int(pytestconfig.getoption("--soak-tracemalloc"))


@pytest.fixture
def figure(request: pytest.FixtureRequest) -> Callable[[str, float, str], None]:
    """Record a measured figure: ``figure("time to 503", 4.2, "s")``."""
    figures = request.config.stash[FIGURES]

    def record(name: str, value: float, unit: str = "") -> None:
        figures.append((f"{request.node.path.stem}::{request.node.name}", name, value, unit))

    return record


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, config: pytest.Config
) -> None:
    figures = config.stash.get(FIGURES, [])
    if not figures:
        return
    mode = "soak" if config.getoption("--soak") else "short"
    terminalreporter.section(f"reliability figures ({mode})")
    for nodeid, name, value, unit in figures:
        shown = f"{value:.3f}".rstrip("0").rstrip(".") if isinstance(value, float) else value
        terminalreporter.write_line(f"{nodeid}: {name} = {shown} {unit}".rstrip())


@pytest.fixture
def umask_000() -> Iterator[None]:
    previous = os.umask(0)
    yield
    os.umask(previous)


def writable_by_others(top: Path) -> list[str]:
    """Every entry under ``top`` (private directories included) that its group or others may
    write, with its mode: a file made without an explicit mode under umask 000 is 0666."""
    found = []
    for dirpath, dirnames, filenames in os.walk(top):
        for name in [*dirnames, *filenames]:
            path = os.path.join(dirpath, name)
            mode = stat.S_IMODE(os.lstat(path).st_mode)
            if mode & 0o022:
                found.append(f"{path} {mode:o}")
    return found
