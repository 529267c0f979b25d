"""Mount roots, with real symlinks in a real directory: a link may lead anywhere inside the
roots, and nowhere outside."""

import os
from pathlib import Path

import pytest

from ufs import roots as roots_module
from ufs.adapter import Ufs
from ufs.errors import UfsError, UfsInvalidPath, UfsOutsideRoots
from ufs.local import resolve
from ufs.roots import MountRoots
from ufs.status import UfsStatus, dir_status


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """``root/`` with links of every kind, next to ``outside/``."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "real" / "sub").mkdir(parents=True)
    (root / "real" / "file.txt").write_bytes(b"inside")
    (outside / "dir").mkdir(parents=True)
    (outside / "secret.txt").write_bytes(b"secret")
    links = {
        "passwd": outside / "secret.txt",  # an absolute link to a file outside
        "outdir": outside / "dir",  # a linked directory outside
        "up": Path("../outside"),  # a relative link climbing out
        "sneaky": Path("real/../../outside/secret.txt"),  # `..` in the target, leading out
        "dangling": outside / "not-yet",  # a create through it would land outside
        "inlink": Path("real/file.txt"),  # inside: fine
        "indir": root / "real",  # inside: fine
        "climb": Path("real/sub/../file.txt"),  # `..` in the target, staying inside
        "loop": Path("loop"),
    }
    for name, target in links.items():
        (root / name).symlink_to(target)
    return tmp_path


def uri(tree: Path, rel: str) -> str:
    return f"file://{tree}/root/{rel}"


@pytest.mark.parametrize(
    "rel",
    [
        "real/file.txt",
        "real/new-file",
        "real/new-dir/deeper/file",
        "inlink",
        "indir",
        "indir/file.txt",
        "indir/new",
        "climb",
        "",
    ],
)
def test_links_that_stay_inside_are_served_under_their_own_name(tree: Path, rel: str) -> None:
    roots = MountRoots([f"file://{tree}/root"])
    assert roots.check(uri(tree, rel)) == uri(tree, rel).rstrip("/")


@pytest.mark.parametrize(
    "rel",
    [
        "passwd",
        "outdir",
        "outdir/new-file",
        "outdir/new-dir/deeper",
        "up",
        "up/secret.txt",
        "sneaky",
        "dangling",
        "dangling/child",
    ],
)
def test_links_that_lead_outside_are_refused(tree: Path, rel: str) -> None:
    roots = MountRoots([f"file://{tree}/root"])
    with pytest.raises(UfsOutsideRoots, match="symbolic link outside the mount roots") as raised:
        roots.check(uri(tree, rel))
    assert "outside/" not in str(raised.value)  # the target is not named


def test_a_symlink_loop_is_an_invalid_path(tree: Path) -> None:
    with pytest.raises(UfsInvalidPath, match="symbolic links"):
        MountRoots([f"file://{tree}/root"]).check(uri(tree, "loop"))


def test_a_root_that_is_itself_a_link_is_resolved(tree: Path) -> None:
    (tree / "alias").symlink_to(tree / "root")
    roots = MountRoots([f"file://{tree}/alias"])
    assert roots.check(f"file://{tree}/alias/inlink") == f"file://{tree}/alias/inlink"
    with pytest.raises(UfsOutsideRoots):
        roots.check(f"file://{tree}/alias/passwd")
    with pytest.raises(UfsOutsideRoots, match="outside the mount roots"):
        roots.check(f"file://{tree}/root/inlink")  # inside once resolved, but not so named


def test_a_link_into_another_root_is_served(tree: Path) -> None:
    roots = MountRoots([f"file://{tree}/root", f"file://{tree}/outside"])
    assert roots.check(uri(tree, "passwd")) == uri(tree, "passwd")


def test_visible_leaves_out_entries_that_lead_outside(tree: Path) -> None:
    roots = MountRoots([f"file://{tree}/root"])
    names = ["real", "passwd", "outdir", "up", "sneaky", "dangling", "inlink", "indir", "loop"]
    entries = [dir_status(uri(tree, name), name) for name in names]
    assert [e.name for e in roots.visible(entries)] == ["real", "inlink", "indir"]


def _checked(roots: MountRoots, entries: list[UfsStatus]) -> list[UfsStatus]:
    """The entries :meth:`MountRoots.check` passes one by one: what ``visible`` must give."""
    passed = []
    for entry in entries:
        try:
            roots.check(entry.uri)
        except UfsError:
            continue
        passed.append(entry)
    return passed


@pytest.mark.parametrize(
    ("listed", "shown"),
    [
        ("", ["climb", "gone", "indir", "inlink", "real"]),
        ("real", ["back", "file.txt", "gone", "sub"]),
        ("indir", ["back", "file.txt", "gone", "sub"]),  # a directory linked inside
        ("outdir", []),  # a directory linked outside: even its plain files are left out
        ("up", []),
    ],
)
@pytest.mark.parametrize("scan", [True, False], ids=["scanned", "by-name"])
def test_visible_is_exactly_what_check_passes(
    tree: Path, listed: str, shown: list[str], scan: bool
) -> None:
    (tree / "outside" / "dir" / "plain.txt").write_bytes(b"outside")
    (tree / "root" / "real" / "back").symlink_to(tree / "root")
    for directory in (tree / "root", tree / "root" / "real", tree / "outside" / "dir"):
        for odd in ("%2e%2e", "a\\b", "bad\nname"):  # files no canonical URI may name
            (directory / odd).write_bytes(b"odd")
    roots = MountRoots([f"file://{tree}/root"])
    names = [*sorted(os.listdir(tree / "root" / listed)), "gone"]
    entries = [dir_status(uri(tree, f"{listed}/{name}".lstrip("/")), name) for name in names]
    visible = roots.visible(entries, scan=scan)
    assert visible == _checked(roots, entries)
    assert sorted(entry.name for entry in visible) == shown


def test_visible_resolves_only_the_links(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A listing's plain entries are settled by one scan of their resolved directory; only
    the links get a resolution of their own."""
    directory = tree / "root" / "many"
    directory.mkdir()
    for index in range(50):
        (directory / f"f{index:02d}").write_bytes(b"x")
    (directory / "in").symlink_to(tree / "root" / "real")
    (directory / "out").symlink_to(tree / "outside")
    roots = MountRoots([f"file://{tree}/root"])
    resolved: list[str] = []

    def counting(path: str) -> str:
        resolved.append(os.path.basename(path))
        return resolve(path)

    monkeypatch.setattr(roots_module, "resolve", counting)
    visible = roots.visible(Ufs().list(f"file://{directory}"))
    assert len(visible) == 51
    assert sorted(resolved) == ["in", "out"]


@pytest.mark.parametrize("scan", [True, False], ids=["scanned", "by-name"])
def test_visible_closes_the_directories_it_opens(tree: Path, scan: bool) -> None:
    roots = MountRoots([f"file://{tree}/root"])
    entries = [
        dir_status(uri(tree, f"{listed}/{name}".lstrip("/")), name)
        for listed in ("", "real", "indir", "outdir")
        for name in ("file.txt", "sub", "passwd")
    ]
    before = sorted(os.listdir("/proc/self/fd"))
    roots.visible(entries, scan=scan)
    assert sorted(os.listdir("/proc/self/fd")) == before


def test_visible_by_name_looks_at_the_given_names_only(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A few files of a large directory (a load job's batch) cost what they are, not what
    the directory holds: no scan, and only the links are resolved."""
    directory = tree / "root" / "many"
    directory.mkdir()
    for index in range(50):
        (directory / f"f{index:02d}").write_bytes(b"x")
    (directory / "out").symlink_to(tree / "outside" / "secret.txt")
    entries = [e for e in Ufs().list(f"file://{directory}") if e.name in ("f07", "f08", "out")]
    roots = MountRoots([f"file://{tree}/root"])
    resolved: list[str] = []

    def counting(path: str) -> str:
        resolved.append(os.path.basename(path))
        return resolve(path)

    def no_scan(path: object) -> None:
        raise AssertionError(f"scanned {path}")

    monkeypatch.setattr(roots_module, "resolve", counting)
    monkeypatch.setattr(os, "scandir", no_scan)
    assert [e.name for e in roots.visible(entries, scan=False)] == ["f07", "f08"]
    assert resolved == ["out"]


def test_resolve_follows_the_kernel(tree: Path) -> None:
    assert resolve(f"{tree}/root/sneaky") == f"{tree}/outside/secret.txt"
    assert resolve(f"{tree}/root/indir/a/b") == f"{tree}/root/real/a/b"
    assert resolve(f"{tree}/root/dangling/x") == f"{tree}/outside/not-yet/x"
    assert resolve(f"{tree}/root/real/file.txt/x") == f"{tree}/root/real/file.txt/x"
    with pytest.raises(OSError, match="symbolic links"):
        resolve(f"{tree}/root/loop")
    assert os.path.isabs(resolve("/"))


def test_object_store_roots_and_malformed_uris() -> None:
    roots = MountRoots(["s3://b/data/", "file:///srv"])
    assert roots.check("s3://b/data/x/") == "s3://b/data/x"
    with pytest.raises(UfsOutsideRoots, match="outside the mount roots"):
        roots.check("s3://b/database/x")
    with pytest.raises(UfsInvalidPath):
        roots.check("file:///srv/../etc/passwd")
    with pytest.raises(UfsOutsideRoots, match="none configured"):
        MountRoots([]).check("s3://b/x")


def test_visible_of_an_object_store_listing_is_exactly_what_check_passes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Names are all an object store has: entries of a canonical directory inside the roots
    are settled by their names, without a check each; the rest are checked one by one."""
    roots = MountRoots(["s3://bucket/data"])
    listed = {
        "s3://bucket/data": ["a", "b.parquet", "sub", "%2e%2e", "x%2Fy", "a b"],
        "s3://bucket": ["data", "other", "dataset"],  # the root's parent: outside but "data"
    }
    entries = [
        dir_status(f"{directory}/{name}", name)
        for directory, names in listed.items()
        for name in names
    ]
    checked: list[str] = []
    check = MountRoots.check

    def counting(self: MountRoots, uri: str) -> str:
        checked.append(uri)
        return check(self, uri)

    expected = _checked(roots, entries)
    monkeypatch.setattr(MountRoots, "check", counting)
    assert roots.visible(entries) == expected
    assert [e.name for e in expected] == ["a", "b.parquet", "sub", "x%2Fy", "a b", "data"]
    assert not any(uri.startswith("s3://bucket/data/") and "%" not in uri for uri in checked)


def test_a_whole_store_root_holds_its_buckets_and_nothing_else() -> None:
    roots = MountRoots(["s3://", "file:///data"])
    assert roots.roots == ("s3://", "file:///data")
    assert roots.check("s3://any-bucket/a/b") == "s3://any-bucket/a/b"
    assert roots.check("s3://any-bucket") == "s3://any-bucket"
    for refused in ("s3://b/../x", "s3://b/a/../../c", "s3://"):
        with pytest.raises(UfsInvalidPath):
            roots.check(refused)
    for outside in ("s3a://b/k", "gs://b/k", "file:///etc/passwd"):
        with pytest.raises(UfsOutsideRoots):
            roots.check(outside)
    # Only an S3 store can be a root whole: any other scheme needs its bucket or host.
    with pytest.raises(UfsInvalidPath):
        MountRoots(["gs://"])
