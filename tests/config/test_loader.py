from pathlib import Path

import pytest

from config import ConfigError, Registry, Source, load_config
from config.loader import parse_properties
from worker.common.client_keys import SYNC_INTERVAL
from worker.keys import build_registry

PAGE = "dora.worker.page.store.page.size"
REGISTRY = build_registry()


def site(tmp_path: Path, text: str) -> str:
    path = tmp_path / "dora-site.properties"
    path.write_text(text)
    return str(path)


def test_precedence_across_all_five_sources(tmp_path: Path) -> None:
    conf = site(tmp_path, f"{PAGE}=2MB\ndora.user.file.metadata.sync.interval=1min\n")
    assert load_config(REGISTRY, environ={}).setting(PAGE).source is Source.DEFAULT
    from_site = load_config(REGISTRY, conf_file=conf, environ={})
    assert from_site.setting(PAGE).value == 2 << 20
    assert from_site.setting(PAGE).source is Source.SITE_FILE
    env = {"DORA_WORKER_PAGE_STORE_PAGE_SIZE": "3MB"}
    from_env = load_config(REGISTRY, conf_file=conf, environ=env)
    assert from_env.setting(PAGE).value == 3 << 20
    assert from_env.setting(PAGE).source is Source.ENVIRONMENT
    from_cli = load_config(REGISTRY, conf_file=conf, environ=env, defines=[f"{PAGE}=4MB"])
    assert from_cli.setting(PAGE).value == 4 << 20
    assert from_cli.setting(PAGE).text == "4MB"
    assert from_cli.get(SYNC_INTERVAL) == 60_000
    call = from_cli.with_call_options({"dora.user.file.metadata.sync.interval": "0"})
    assert call.get(SYNC_INTERVAL) == 0
    assert call.setting(SYNC_INTERVAL).source is Source.CALL


def test_site_file_from_conf_dir(tmp_path: Path) -> None:
    site(tmp_path, "alluxio.worker.page.store.page.size: 8MB\n")
    config = load_config(REGISTRY, environ={"DORA_CONF_DIR": str(tmp_path)})
    assert config.setting(PAGE).value == 8 << 20


def test_per_call_options_only_for_user_keys() -> None:
    config = load_config(REGISTRY, environ={})
    with pytest.raises(ConfigError, match="cannot be set per call"):
        config.with_call_options({PAGE: "2MB"})


def test_site_file_errors_name_file_and_line(tmp_path: Path) -> None:
    conf = site(tmp_path, "# comment\n\ndora.worker.page.store.page.size=1MB\nnot a pair\n")
    with pytest.raises(ConfigError, match=r"dora-site.properties:4: malformed line 'not a pair'"):
        load_config(REGISTRY, conf_file=conf, environ={})
    conf = site(tmp_path, "\ndora.worker.page.store.pages.size=1MB\n")
    with pytest.raises(ConfigError, match=r"properties:2\).*did you mean"):
        load_config(REGISTRY, conf_file=conf, environ={})
    conf = site(tmp_path, "dora.worker.http.port=eighty\n")
    with pytest.raises(ConfigError, match=r"'eighty' for 'dora.worker.http.port' .*:1\): expected"):
        load_config(REGISTRY, conf_file=conf, environ={})


def test_a_site_file_must_be_utf8(tmp_path: Path) -> None:
    conf = tmp_path / "dora-site.properties"
    conf.write_bytes(b"# latin-1, not UTF-8\n\ndora.work.dir=/data/caf\xe9\n")
    with pytest.raises(ConfigError, match=r"is not UTF-8 text: byte 0xe9 on line 3; expected"):
        load_config(REGISTRY, conf_file=str(conf), environ={})


def test_a_usable_value_is_reported_with_its_source(tmp_path: Path) -> None:
    config = load_config(REGISTRY, environ={}, defines=["dora.worker.http.port=80"])
    error = config.invalid(config.registry.lookup("dora.worker.http.port"), "it is taken")
    expected = "bad value '80' for 'dora.worker.http.port' (command line: -D): it is taken"
    assert str(error) == expected


def test_missing_conf_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(REGISTRY, conf_file=str(tmp_path / "nope.properties"), environ={})


def test_environment_errors() -> None:
    with pytest.raises(ConfigError, match="DORA_WORKER_PAGE_STORE_PAGE_SISE.*did you mean"):
        load_config(REGISTRY, environ={"DORA_WORKER_PAGE_STORE_PAGE_SISE": "1MB"})
    with pytest.raises(ConfigError, match="environment: DORA_WORKER_HTTP_PORT"):
        load_config(REGISTRY, environ={"DORA_WORKER_HTTP_PORT": "x"})
    assert load_config(REGISTRY, environ={"DORA_CONF_DIR": "/nonexistent", "HOME": "/"})


def test_define_errors() -> None:
    with pytest.raises(ConfigError, match="expected -Dkey=value"):
        load_config(REGISTRY, environ={}, defines=["justakey"])
    with pytest.raises(ConfigError, match="did you mean 'dora.worker.page.store.page.size'"):
        load_config(REGISTRY, environ={}, defines=["dora.worker.page.store.page.sise=4MB"])


def test_secrets_are_masked_in_messages_and_listings() -> None:
    key = "dora.ufs.s3.secret.access.key"
    config = load_config(REGISTRY, environ={}, defines=[f"{key}=hunter2"])
    assert config.setting(key).shown() == "******"
    assert config.setting(key).shown(reveal_secrets=True) == "hunter2"
    with pytest.raises(ConfigError) as raised:
        load_config(REGISTRY, environ={}, defines=["dora.worker.security.token=a", f"{PAGE}=x"])
    assert "hunter2" not in str(raised.value)


def test_properties_continuation_lines() -> None:
    entries = parse_properties("a.b = one,\\\n   two\n! bang comment\nc.d:3\n", "f")
    assert entries == [("a.b", "one,two", 1), ("c.d", "3", 4)]


SECRET = "dora.ufs.s3.secret.access.key"


def test_a_secret_given_with_d_is_warned_about_once() -> None:
    config = load_config(
        REGISTRY, environ={}, defines=[f"{SECRET}=hunter2", f"{SECRET}=hunter3", f"{PAGE}=2MB"]
    )
    assert len(config.warnings) == 1
    assert SECRET in config.warnings[0] and "DORA_UFS_S3_SECRET_ACCESS_KEY" in config.warnings[0]
    assert "hunter" not in config.warnings[0]
    from_env = load_config(REGISTRY, environ={"DORA_UFS_S3_SECRET_ACCESS_KEY": "hunter2"})
    assert from_env.warnings == ()


@pytest.mark.parametrize(
    ("text", "mode", "warned"),
    [
        (f"{SECRET}=hunter2\n", 0o644, True),
        (f"{SECRET}=hunter2\n", 0o640, True),
        (f"{SECRET}=hunter2\n", 0o600, False),
        (f"{PAGE}=2MB\n", 0o644, False),
    ],
)
def test_a_site_file_holding_a_secret_should_be_private(
    tmp_path: Path, text: str, mode: int, warned: bool
) -> None:
    conf = site(tmp_path, text)
    Path(conf).chmod(mode)
    warnings = load_config(REGISTRY, conf_file=conf, environ={}).warnings
    assert bool(warnings) == warned
    if warned:
        assert f"chmod 600 {conf}" in warnings[0] and f"mode {mode:o}" in warnings[0]


def test_sources_name_where_the_values_came_from_and_never_a_value(tmp_path: Path) -> None:
    assert load_config(REGISTRY, environ={}).sources() == "defaults only"
    conf = site(tmp_path, f"{PAGE}=2MB\ndora.worker.security.token=s3cr3t\n")
    env = {"DORA_WORKER_HTTP_PORT": "1234", "DORA_CONF_DIR": "/ignored"}
    config = load_config(REGISTRY, conf_file=conf, environ=env, defines=[f"{PAGE}=4MB"])
    # The page size is counted once, where its value came from (-D beats the site file).
    assert config.sources() == (
        f"site file {conf} (1 key); environment DORA_WORKER_HTTP_PORT; -D {PAGE}; "
        f"defaults for {len(REGISTRY) - 3} keys"
    )


def test_a_scoped_registry_skips_other_processes_keys_and_checks_its_own(tmp_path: Path) -> None:
    """A client's registry holds its keys only: the worker's keys in the shared site file and
    environment are the worker's to check; a misspelt key of its own namespace is an error."""
    scoped = Registry(scope=("dora.user.",)).extend([SYNC_INTERVAL])
    conf = site(tmp_path, f"{PAGE}=2MB\ndora.user.file.metadata.sync.interval=1min\n")
    env = {"DORA_WORKER_PAGE_STORE_PAGE_SIZE": "3MB"}
    assert load_config(scoped, conf_file=conf, environ=env).get(SYNC_INTERVAL) == 60_000
    typo = site(tmp_path, "dora.user.file.metadata.sync.intreval=1min\n")
    with pytest.raises(ConfigError, match="did you mean 'dora.user.file.metadata.sync.interval'"):
        load_config(scoped, conf_file=typo, environ={})
    with pytest.raises(ConfigError, match="DORA_USER_FILE_METADATA_SYNC_INTREVAL"):
        load_config(scoped, environ={"DORA_USER_FILE_METADATA_SYNC_INTREVAL": "1"})
