"""Mount roots are a security boundary on every operation (DESIGN.md): through a real worker
process, every way out of the root — ``..`` in its plain and percent-encoded forms, a sibling
prefix, absolute paths, symlinked files and directories inside the root — is answered 400 or
403, and nothing outside is read or changed."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from tests.reliability.support import Worker, wait_for

pytestmark = pytest.mark.reliability

SECRET = b"TOP-SECRET: nothing outside the root may be served\n"
REFUSED = (400, 403)


def traversals(root: Path, outside: Path) -> list[str]:
    """Paths that name ``outside/secret.txt`` by traversal or another prefix."""
    r, name = f"file://{root}", f"{outside.name}/secret.txt"
    return [
        f"{r}/../{name}",
        f"{r}/dir/../../{name}",
        f"{r}/./../{name}",
        f"{r}/%2e%2e/{name}",
        f"{r}/%2E%2E/{name}",
        f"{r}/%252e%252e/{name}",
        f"{r}/..%2f{name}",
        f"{r}/dir%2f..%2f..%2f{name}",
        f"file://{outside}/secret.txt",
        f"{outside}/secret.txt",
        f"file://{root}-evil/secret.txt",
        f"{r}\\..\\{name}",
    ]


def symlinks(root: Path) -> list[str]:
    """Paths inside the root that resolve outside it through a symlink."""
    r = f"file://{root}"
    return [
        f"{r}/passwd",  # a symlinked file
        f"{r}/link_dir",  # a symlinked directory
        f"{r}/link_dir/secret.txt",  # a file under a symlinked directory
        f"{r}/link_dir/new",  # a new name under it (write, mkdir, rename target)
        f"{r}/dir/up/secret.txt",  # a relative symlink two levels up
        f"{r}/dangling",  # a symlink to an outside name that does not exist yet
    ]


# Each operation: method, endpoint, and its parameters for a path (and a file inside the root).
OPERATIONS: dict[str, tuple[str, str, Callable[[str, str], dict[str, str]]]] = {
    "status": ("GET", "/v1/status", lambda p, _: {"path": p, "sync_interval": "0"}),
    "list": ("GET", "/v1/list", lambda p, _: {"path": p, "sync_interval": "0"}),
    "read": ("GET", "/v1/read", lambda p, _: {"path": p, "sync_interval": "0"}),
    "write": ("PUT", "/v1/write", lambda p, _: {"path": p}),
    "rename-from": ("POST", "/v1/rename", lambda p, inside: {"src": p, "dst": inside + ".moved"}),
    "rename-to": ("POST", "/v1/rename", lambda p, inside: {"src": inside, "dst": p}),
    "mkdir": ("POST", "/v1/mkdir", lambda p, _: {"path": p}),
    "delete": ("DELETE", "/v1/delete", lambda p, _: {"path": p, "recursive": "true"}),
    "invalidate": ("POST", "/v1/invalidate", lambda p, _: {"path": p, "recursive": "true"}),
    "load": ("POST", "/v1/load", lambda p, _: {"path": p, "recursive": "true"}),
}


def call(worker: Worker, name: str, path: str, inside: str) -> httpx.Response:
    method, endpoint, params = OPERATIONS[name]
    body = b"overwritten" if method == "PUT" else None
    url = worker.url + endpoint
    return worker.http.request(method, url, params=params(path, inside), content=body)


def snapshot(top: Path) -> dict[str, bytes | str]:
    """Every entry under ``top``: file contents, symlink targets, directories."""
    found: dict[str, bytes | str] = {}
    for dirpath, dirnames, filenames in os.walk(top):
        for name in dirnames + filenames:
            path = Path(dirpath, name)
            key = str(path.relative_to(top))
            if path.is_symlink():
                found[key] = f"-> {os.readlink(path)}"
            elif path.is_dir():
                found[key] = "dir"
            else:
                found[key] = path.read_bytes()
    return found


class Tree:
    """A mount root with symlinks out of it, and the outside it must never reach."""

    def __init__(self, base: Path) -> None:
        self.root = base / "root"
        self.outside = base / "outside"
        self.evil = base / "root-evil"

    def build(self) -> None:
        for top in (self.root, self.outside, self.evil):
            top.mkdir()
        (self.outside / "secret.txt").write_bytes(SECRET)
        (self.outside / "sub").mkdir()
        (self.outside / "sub" / "deep.txt").write_bytes(SECRET)
        (self.evil / "secret.txt").write_bytes(SECRET)
        (self.root / "inside.txt").write_bytes(b"inside")
        (self.root / "dir").mkdir()
        (self.root / "dir" / "x.txt").write_bytes(b"x" * 100)
        (self.root / "passwd").symlink_to(self.outside / "secret.txt")
        (self.root / "link_dir").symlink_to(self.outside)
        (self.root / "dir" / "up").symlink_to(Path("..", "..", self.outside.name))
        (self.root / "dangling").symlink_to(self.outside / "not-yet")

    def outside_state(self) -> dict[str, dict[str, bytes | str]]:
        return {"outside": snapshot(self.outside), "evil": snapshot(self.evil)}


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Tree:
    tree = Tree(tmp_path_factory.mktemp("escapes"))
    tree.build()
    return tree


@pytest.fixture(scope="module")
def worker(tree: Tree, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Worker]:
    worker = Worker(tmp_path_factory.mktemp("escapes-worker"),
                    f"dora.worker.ufs.roots=file://{tree.root}")  # fmt: skip
    worker.start()
    yield worker
    worker.close()


@pytest.fixture
def rebuilt(tree: Tree) -> Iterator[None]:
    """Rebuilds the tree after the test, so one escape cannot hide the next."""
    yield
    for top in (tree.root, tree.outside, tree.evil):
        _remove_tree(top)
    tree.build()


def _remove_tree(top: Path) -> None:
    for dirpath, dirnames, filenames in os.walk(top, topdown=False):
        for name in filenames:
            Path(dirpath, name).unlink()
        for name in dirnames:
            path = Path(dirpath, name)
            path.unlink() if path.is_symlink() else path.rmdir()
    top.rmdir()


def escapes(worker: Worker, tree: Tree, operation: str, paths: list[str]) -> list[str]:
    """What went wrong for each path: not refused, the secret leaked, or something outside
    the root changed."""
    before = tree.outside_state()
    wrong = []
    for path in paths:
        answer = call(worker, operation, path, f"file://{tree.root}/inside.txt")
        if answer.status_code not in REFUSED or SECRET.strip() in answer.content:
            wrong.append(f"{path!r}: {answer.status_code} {answer.text[:120]!r}")
        if tree.outside_state() != before:
            wrong.append(f"{path!r}: changed what is outside the root")
            before = tree.outside_state()
    return wrong


@pytest.mark.parametrize("name", OPERATIONS)
def test_traversal_is_refused(name: str, worker: Worker, tree: Tree, rebuilt: None) -> None:
    paths = traversals(tree.root, tree.outside)
    assert escapes(worker, tree, name, paths) == []


@pytest.mark.parametrize("name", OPERATIONS)
def test_symlinks_out_of_the_root_are_refused(
    name: str, worker: Worker, tree: Tree, rebuilt: None
) -> None:
    assert escapes(worker, tree, name, symlinks(tree.root)) == []


def test_a_load_of_the_root_loads_only_what_is_inside(
    worker: Worker, tree: Tree, rebuilt: None
) -> None:
    job = worker.http.post(
        worker.url + "/v1/load", params={"path": f"file://{tree.root}", "recursive": "true"}
    ).json()

    def finished() -> bool:
        nonlocal job
        job = worker.get(f"/v1/load/{job['id']}").json()
        return job["state"] != "running"

    wait_for(finished, "the load job")
    inside = [tree.root / "inside.txt", tree.root / "dir" / "x.txt"]
    assert (job["files_total"], job["bytes_total"]) == (
        len(inside),
        sum(p.stat().st_size for p in inside),
    ), job


def test_the_worker_still_serves_what_is_inside(worker: Worker, tree: Tree) -> None:
    answer = worker.read(f"file://{tree.root}/dir/x.txt", sync_interval=0)
    assert (answer.status_code, answer.content) == (200, b"x" * 100)
