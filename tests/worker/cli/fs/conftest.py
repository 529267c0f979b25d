"""``dora fs`` commands run in process, through the same parser and error handling as the
console script, on a ``dora`` filesystem over the real worker app (``httpx.ASGITransport``)
fronting a local directory."""

import argparse
import os
from pathlib import Path

import httpx
import pytest

from tests.worker.client.conftest import client_config
from worker.api.app import create_app
from worker.cli.fs import add_parser
from worker.cli.fs.session import Session, execute
from worker.client import DoraFileSystem
from worker.service import WorkerService


class Cli:
    """``cli("ls", uri)`` runs ``dora fs ls URI`` on ``session``; its exit status."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.parser = argparse.ArgumentParser(prog="dora")
        add_parser(self.parser.add_subparsers(dest="command"))

    def __call__(self, *argv: str) -> int:
        args = self.parser.parse_args(["fs", *argv])
        return execute(args.action, lambda: args.command(self.session, args))


def cli_on(transport: httpx.BaseTransport | httpx.AsyncBaseTransport, *defines: str) -> Cli:
    config = client_config(*defines)
    fs = DoraFileSystem(
        transport=transport,
        config=config,
        fallback_to_ufs=False,
        near_cache=False,  # as Session.open builds it
        skip_instance_cache=True,
    )
    return Cli(Session(fs, config))


@pytest.fixture
def cli(service: WorkerService) -> Cli:
    return cli_on(httpx.ASGITransport(app=create_app(service)))


@pytest.fixture
def root(data_dir: Path) -> str:
    """The worker's mount root as a URI."""
    return f"file://{data_dir}"


def error_line(err: str, action: str) -> str:
    """The one line a failed ``dora fs ACTION`` printed on stderr (asserted to be one)."""
    assert err.startswith(f"dora fs {action}: ") and err.count("\n") == 1, err
    return err


def tree_files(top: Path) -> dict[str, bytes]:
    """Every file below ``top`` by its ``/``-separated relative path, with its bytes."""
    return {
        path.relative_to(top).as_posix(): path.read_bytes()
        for path in sorted(top.rglob("*"))
        if path.is_file()
    }


def make_tree(top: Path) -> dict[str, bytes]:
    """A small tree with nested and empty directories; its files as :func:`tree_files`."""
    (top / "sub" / "deeper").mkdir(parents=True)
    (top / "empty").mkdir()
    (top / "a.txt").write_bytes(b"alpha\n")
    (top / "sub" / "b.bin").write_bytes(os.urandom(70_000))
    (top / "sub" / "deeper" / "c.parquet").write_bytes(b"PAR1" + os.urandom(3000))
    (top / "zero").write_bytes(b"")
    return tree_files(top)
