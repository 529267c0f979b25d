"""The rules file read into the rules model: globs, each directive parsed and refused
precisely (file, line, directive), and a file edited under a running worker taking effect."""

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from config import ConfigError
from worker.rules.globs import compile_glob
from worker.rules.model import Admission, Settings
from worker.rules.parse import NEVER, parse_file
from worker.service import WorkerService


@pytest.mark.parametrize(
    ("pattern", "matching", "other"),
    [
        (
            "s3://lake/**/_delta_log/**",
            [
                "s3://lake/t/_delta_log/0001.json",
                "s3://lake/a/b/_delta_log",
                "s3://lake/_delta_log/x",
            ],
            ["s3://lake/t/data.parquet", "s3://lake/t/_delta_logs/x", "s3://lake2/_delta_log/x"],
        ),
        (
            "s3://lake/*/part-?.parquet",
            ["s3://lake/t/part-1.parquet"],
            ["s3://lake/t/u/part-1.parquet", "s3://lake/t/part-10.parquet"],
        ),
        ("S3://lake/raw/**", ["s3://lake/raw", "s3://lake/raw/a/b"], ["s3://lake/rawer/a"]),
        ("s3://**/x.txt", ["s3://a/x.txt", "s3://a/b/x.txt"], ["s3://a/y.txt"]),
    ],
)
def test_globs(pattern: str, matching: list[str], other: list[str]) -> None:
    regex = compile_glob(pattern)
    assert [uri for uri in matching if regex.fullmatch(uri)] == matching
    assert [uri for uri in other if regex.fullmatch(uri)] == []


def test_each_line_reads_into_what_it_sets() -> None:
    rules = parse_file(
        "# lakehouse tables\n"
        "s3://lake/**/_delta_log/**  max-age=0\n"
        "s3://lake/**  immutable   # data files never change\n"
        "s3://raw/**   max-age=5min serve-stale\n"
        "s3://**       serve-stale\n",
        "rules",
    )
    assert [r.settings.sync_interval for r in rules] == [0, NEVER, 300_000, None]
    assert [r.settings.serve_stale for r in rules] == [None, None, True, True]
    assert [r.origin for r in rules] == ["rules:2", "rules:3", "rules:4", "rules:5"]
    # "<uri>/**" with no other wildcard is a prefix (indexed); the others are globs.
    assert [r.prefix for r in rules] == [None, "s3://lake", "s3://raw", None]


def test_every_field_has_a_directive() -> None:
    (rule,) = parse_file(
        "s3://lake/scratch/** admission=second-read window=10min pin ttl=7d quota=2GB "
        "serve-stale=false max-age=0",
        "rules",
    )
    assert rule.settings == Settings(
        sync_interval=0,
        serve_stale=False,
        admission=Admission.SECOND_READ,
        window=600_000,
        pin=True,
        ttl=7 * 86_400_000,
        quota=2 << 30,
    )
    (off,) = parse_file("s3://lake/a/** admission=pass pin=false", "rules")
    assert (off.settings.admission, off.settings.pin) == (Admission.PASS, False)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("s3://lake/**", "rules:1: expected '<glob pattern> immutable|max-age=<duration> ["),
        ("\ns3://lake/** mutable", "rules:2: 'mutable' is not immutable, max-age=<duration> or"),
        ("s3://lake/** immutable max-age=1s", "rules:1: 'immutable max-age=1s': expected"),
        ("s3://lake/** serve-stale serve-stale", "rules:1: 'serve-stale serve-stale': expected"),
        ("s3://lake/** max-age=soon", "rules:1: max-age='soon':"),
        ("lake/** immutable", "rules:1: invalid path"),
        ("s3://lake/** admission=maybe", "rules:1: admission='maybe': expected one of cache, pass"),
        ("s3://lake/** admission", "rules:1: 'admission' is not immutable"),
        ("s3://lake/** window=1h", "rules:1: window= applies only with admission=second-read"),
        ("s3://lake/** admission=second-read window=0", "rules:1: window='0': expected more"),
        ("s3://lake/** pin=yes", "rules:1: pin='yes': expected true or false"),
        ("s3://lake/** ttl=0", "rules:1: ttl='0': expected more than 0"),
        ("s3://lake/** ttl=soon", "rules:1: ttl='soon': expected a duration"),
        ("s3://lake/** quota=lots", "rules:1: quota='lots': expected a size"),
        ("s3://lake/** quota=1GB quota=2GB", "rules:1: 'quota=1GB quota=2GB': expected each"),
        ("s3://lake/** pin pin=false", "(pin twice)"),
    ],
)
def test_a_bad_line_is_named(text: str, problem: str) -> None:
    with pytest.raises(ConfigError) as raised:
        parse_file(text, "rules")
    assert problem in str(raised.value)


def test_a_worker_takes_an_edited_rules_file(
    make_service: Callable[..., WorkerService], data_dir: Path, tmp_path: Path
) -> None:
    rules = tmp_path / "rules"
    rules.write_text(f"file://{data_dir}/tables/** immutable\n")
    (data_dir / "tables").mkdir()
    (data_dir / "tables" / "f").write_bytes(b"one")
    uri = f"file://{data_dir}/tables/f"
    # Calls send no sync interval, and the default is "always re-check": only rules differ.
    service = make_service(
        f"dora.worker.path.rules.file={rules}", "dora.user.file.metadata.sync.interval=0"
    )
    assert b"".join(service.read(service.request(uri)).chunks) == b"one"
    (data_dir / "tables" / "f").write_bytes(b"two, longer")
    assert (
        b"".join(service.read(service.request(uri)).chunks) == b"one"
    )  # immutable: never re-checked
    rules.write_text(f"file://{data_dir}/tables/** max-age=0\n")
    deadline = time.monotonic() + 30
    while b"".join(service.read(service.request(uri)).chunks) != b"two, longer":
        assert time.monotonic() < deadline, "the edited rules file was not taken"
        time.sleep(0.1)


def test_a_worker_with_a_broken_rules_file_does_not_start(
    make_service: Callable[..., WorkerService], tmp_path: Path
) -> None:
    rules = tmp_path / "rules"
    rules.write_text("s3://lake/** sometimes\n")
    with pytest.raises(ConfigError, match="rules:1: 'sometimes' is not immutable"):
        make_service(f"dora.worker.path.rules.file={rules}")
    with pytest.raises(ConfigError, match="cannot read"):
        make_service(f"dora.worker.path.rules.file={tmp_path / 'missing'}")
