"""``dora conf`` through the installed console script, as a user runs it."""

import os
import subprocess
import sys
from pathlib import Path

DORA = str(Path(sys.executable).with_name("dora"))


def dora(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("DORA_")}
    return subprocess.run(
        [DORA, *args], capture_output=True, text=True, env={**clean, **(env or {})}, check=False
    )


def test_command_line_value_and_source() -> None:
    out = dora("conf", "list", "--show-source", "-Ddora.worker.page.store.page.size=4MB")
    assert out.returncode == 0, out.stderr
    assert "dora.worker.page.store.page.size=4MB  (command line: -D)" in out.stdout.splitlines()


def test_environment_value_and_source() -> None:
    env = {"DORA_WORKER_PAGE_STORE_PAGE_SIZE": "2MB"}
    out = dora("conf", "list", "--show-source", env=env)
    line = "dora.worker.page.store.page.size=2MB  (environment: DORA_WORKER_PAGE_STORE_PAGE_SIZE)"
    assert line in out.stdout.splitlines()


def test_misspelled_key_exits_nonzero_with_suggestion() -> None:
    out = dora("conf", "list", "-Ddora.worker.page.store.page.sise=4MB")
    assert out.returncode != 0
    assert "did you mean 'dora.worker.page.store.page.size'" in out.stderr


def test_bad_value_names_key_and_form() -> None:
    out = dora("conf", "list", "-Ddora.worker.page.store.page.size=lots")
    assert out.returncode != 0
    assert "'dora.worker.page.store.page.size'" in out.stderr
    assert "1MB" in out.stderr


def test_get_masks_secrets(tmp_path: Path) -> None:
    conf = tmp_path / "site.properties"
    conf.write_text("dora.ufs.s3.secret.access.key=hunter2\ndora.worker.http.port=9999\n")
    assert dora("conf", "get", "dora.worker.http.port", "--conf", str(conf)).stdout == "9999\n"
    out = dora("conf", "get", "dora.ufs.s3.secret.access.key", "--conf", str(conf))
    assert out.stdout == "******\n"


def test_paths_shows_the_table_and_what_applies_to_a_uri(tmp_path: Path) -> None:
    conf = tmp_path / "site.properties"
    conf.write_text(
        "dora.worker.path.conf=s3://lake/hot dora.user.file.metadata.sync.interval=0, \\\n"
        "    s3://lake/raw dora.user.file.readtype.default=NO_CACHE\n"
    )
    out = dora("conf", "paths", "--conf", str(conf))
    assert out.stdout.splitlines() == [
        "s3://lake/hot  dora.user.file.metadata.sync.interval=0",
        "s3://lake/raw  dora.user.file.readtype.default=NO_CACHE",
    ]
    out = dora("conf", "paths", "s3://lake/raw/a.csv", "--conf", str(conf))
    assert out.stdout.splitlines()[:3] == [
        "sync-interval=-1  (default)",
        "serve-stale=false  (default)",
        "admission=pass  (dora.worker.path.conf: s3://lake/raw  "
        "dora.user.file.readtype.default=NO_CACHE)",
    ]


def test_paths_refuses_a_bad_rule_with_one_line() -> None:
    out = dora("conf", "paths", "-Ddora.worker.path.conf=s3://lake sync=0")
    assert out.returncode == 2
    assert out.stderr.startswith("dora: dora.worker.path.conf: rule 's3://lake sync=0'")
