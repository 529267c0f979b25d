"""Opening a metastore directory that cannot be opened: recover=wipe starts cold, recover=fail
raises an error naming the directory and the cause; a busy directory, or anything at the path
that the cache did not create, is never wiped."""

from __future__ import annotations

import logging
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from pagestore import modes
from tests.worker.meta.support import FakeClock, rocks_options
from ufs.status import UfsStatus
from worker.meta.entry import MetaEntry, Operation
from worker.meta.errors import MetastoreBusy, MetastoreOpenError
from worker.meta.options import RecoverPolicy
from worker.meta.rocks import RocksMetastore

URI = "s3://b/a"


def filled(path: Path, clock: FakeClock) -> None:
    store = RocksMetastore.open(rocks_options(path), clock)
    status = UfsStatus(URI, "a", False, 1, 1, "1-1", None)
    store.put(URI, MetaEntry(status, clock.now, Operation.LOADED))
    store.close()


def garbage_current(path: Path) -> None:
    (path / "CURRENT").write_bytes(b"\x00\xffnot a manifest name\n")


def garbage_manifest(path: Path) -> None:
    for manifest in path.glob("MANIFEST-*"):
        manifest.write_bytes(b"\xde\xad\xbe\xef" * 64)


def file_instead_of_dir(path: Path) -> None:
    for child in path.iterdir():
        child.unlink()
    path.rmdir()
    path.write_bytes(b"not a directory")


def foreign_rocksdb(path: Path) -> None:
    (path / "DORACACHE").unlink()


def other_format(path: Path) -> None:
    (path / "DORACACHE").write_bytes(b"doracache metastore, value format 99\n")


def contents(path: Path) -> dict[str, bytes]:
    """The bytes of the store's data files (RocksDB's info LOG may change on a failed open)."""
    if not path.is_dir():
        return {"": path.read_bytes()}
    data = ("CURRENT", "MANIFEST-", "DORACACHE", ".sst", ".log")
    return {
        p.name: p.read_bytes()
        for p in path.iterdir()
        if p.name.startswith(data) or p.name.endswith(data)
    }


# Damage to a metastore the cache created (its marker is there): recovery applies.
DAMAGE: list[Callable[[Path], None]] = [garbage_current, garbage_manifest, other_format]
# Something at the path that the cache did not create: refused whatever the policy.
FOREIGN: list[Callable[[Path], None]] = [file_instead_of_dir, foreign_rocksdb]


@pytest.mark.parametrize("damage", DAMAGE)
def test_wipe_logs_loudly_and_starts_cold(
    damage: Callable[[Path], None],
    tmp_path: Path,
    clock: FakeClock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    path = tmp_path / "ms"
    filled(path, clock)
    damage(path)
    with caplog.at_level(logging.ERROR):
        store = RocksMetastore.open(rocks_options(path, recover=RecoverPolicy.WIPE), clock)
    assert store.get(URI) is None
    store.close()
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and str(path) in errors[0].getMessage()
    assert "wipe" in errors[0].getMessage()


@pytest.mark.parametrize("damage", DAMAGE)
def test_fail_raises_naming_the_directory_and_leaves_it(
    damage: Callable[[Path], None], tmp_path: Path, clock: FakeClock
) -> None:
    path = tmp_path / "ms"
    filled(path, clock)
    damage(path)
    before = contents(path)
    with pytest.raises(MetastoreOpenError, match="cannot open metastore") as caught:
        RocksMetastore.open(rocks_options(path, recover=RecoverPolicy.FAIL), clock)
    assert str(path) in str(caught.value)
    assert contents(path) == before
    # The lock was released: a later open with wipe works.
    RocksMetastore.open(rocks_options(path, recover=RecoverPolicy.WIPE), clock).close()


def test_a_directory_in_use_is_busy_and_never_wiped(tmp_path: Path, clock: FakeClock) -> None:
    path = tmp_path / "ms"
    first = RocksMetastore.open(rocks_options(path), clock)
    with pytest.raises(MetastoreBusy, match="in use"):
        RocksMetastore.open(rocks_options(path, recover=RecoverPolicy.WIPE), clock)
    status = UfsStatus(URI, "a", False, 1, 1, "1-1", None)
    first.put(URI, MetaEntry(status, clock.now, Operation.LOADED))
    first.flush()
    assert first.get(URI) is not None
    first.close()


@pytest.mark.parametrize("policy", list(RecoverPolicy))
@pytest.mark.parametrize("foreign", FOREIGN)
def test_what_the_cache_did_not_create_is_refused_and_left_as_it_was(
    foreign: Callable[[Path], None], policy: RecoverPolicy, tmp_path: Path, clock: FakeClock
) -> None:
    path = tmp_path / "ms"
    filled(path, clock)
    foreign(path)
    (tmp_path / ".ms.lock").unlink()  # as if the cache had never been here
    before = contents(path)
    with pytest.raises(MetastoreOpenError, match="refusing") as caught:
        RocksMetastore.open(rocks_options(path, recover=policy), clock)
    assert str(path) in str(caught.value)
    assert contents(path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ms"]


def test_a_foreign_non_empty_directory_is_refused_not_wiped(
    tmp_path: Path, clock: FakeClock
) -> None:
    path = tmp_path / "precious"
    path.mkdir()
    (path / "thesis.tex").write_text("years of work")
    with pytest.raises(MetastoreOpenError, match="refusing"):
        RocksMetastore.open(rocks_options(path, recover=RecoverPolicy.WIPE), clock)
    assert (path / "thesis.tex").read_text() == "years of work"


def test_a_missing_directory_is_created_with_its_parents(tmp_path: Path, clock: FakeClock) -> None:
    path = tmp_path / "deep" / "er" / "ms"
    RocksMetastore.open(rocks_options(path), clock).close()
    assert (path / "DORACACHE").is_file()


def test_wipe_empties_a_directory_reached_by_a_symlink_and_keeps_the_link(
    tmp_path: Path, clock: FakeClock
) -> None:
    real, link = tmp_path / "ssd" / "ms", tmp_path / "ms"
    filled(real, clock)
    garbage_current(real)
    link.symlink_to(real)
    store = RocksMetastore.open(rocks_options(link, recover=RecoverPolicy.WIPE), clock)
    assert store.get(URI) is None
    store.close()
    assert link.is_symlink() and (real / "DORACACHE").is_file()


def test_a_metastore_made_under_a_looser_umask_is_made_private_at_open(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 36 item 11: a metastore directory made before the worker set its modes stays
    0777; now it is the user's only again at the next open, and that is logged."""
    path = tmp_path / "meta"
    filled(path, FakeClock())
    path.chmod(0o777)
    with caplog.at_level(logging.WARNING, logger="worker.meta"):
        RocksMetastore.open(rocks_options(path), FakeClock()).close()
    assert stat.S_IMODE(path.stat().st_mode) == modes.PRIVATE_DIR
    assert any("looser umask" in r.getMessage() for r in caplog.records)
