"""Client options: site properties, overridden by constructor arguments, validated once."""

from pathlib import Path

import pytest

from config import ConfigError, load_config
from tests.worker.client.conftest import client_config
from worker.client.options import (
    ClientOptions,
    client_registry,
    sync_interval_param,
    with_storage_options,
)
from worker.common.client_keys import USER_CLIENT_NEAR_CACHE as NEAR_CACHE


def test_defaults_come_from_the_properties() -> None:
    options = ClientOptions.resolve(
        client_config(
            "dora.user.client.timeout=5s",
            "dora.user.client.virtual.nodes=7",
            "dora.user.client.fallback.to.ufs=false",
            workers="a:1, b:2",
        )
    )
    assert options.ring_names == ("a:1", "b:2")
    assert options.workers == ("http://a:1", "http://b:2")
    assert options.timeout_s == 5.0
    assert options.connect_timeout_s == 2.0
    assert options.virtual_nodes == 7
    assert options.fallback_to_ufs is False
    assert options.sync_interval is None  # unset: the worker's default applies
    assert options.read_chunk_size == 8 << 20


def test_arguments_override_the_properties() -> None:
    options = ClientOptions.resolve(
        client_config(),
        workers=["h:9"],
        timeout="250ms",
        sync_interval=0,
        token="t",
        fallback_to_ufs=False,
        virtual_nodes=3,
    )
    assert options.ring_names == ("h:9",)
    assert options.timeout_s == 0.25
    assert options.connect_timeout_s == 0.25
    assert options.sync_interval == "0"
    assert options.token == "t"


def test_every_option_also_takes_text_as_polars_storage_options_send() -> None:
    options = ClientOptions.resolve(
        client_config(),
        workers="h1:1, h2:2",
        timeout="2.5",
        sync_interval="30s",
        token="t",
        fallback_to_ufs="false",
        virtual_nodes="3",
    )
    assert options.ring_names == ("h1:1", "h2:2")
    assert options.timeout_s == 2.5  # a number as text is seconds, as the number is
    assert options.sync_interval == "30s"
    assert options.fallback_to_ufs is False
    assert options.virtual_nodes == 3
    assert ClientOptions.resolve(client_config(), timeout="250ms").timeout_s == 0.25
    assert ClientOptions.resolve(client_config(), fallback_to_ufs="true").fallback_to_ufs


def test_a_sync_interval_set_in_the_properties_is_sent() -> None:
    config = client_config("dora.user.file.metadata.sync.interval=30s")
    assert ClientOptions.resolve(config).sync_interval == "30s"


@pytest.mark.parametrize("value", [-1, 0, 1500, "30s", "-1", "2min"])
def test_sync_interval_forms(value: int | str) -> None:
    assert sync_interval_param(value) == str(value)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"workers": ["nohost"]}, "not host:port"),
        ({"workers": ["h:99999"]}, "not host:port"),
        ({"workers": "ftp://h:1"}, "not an http"),
        ({"workers": []}, "at least one worker"),
        ({"timeout": 0}, "timeout=0"),
        ({"timeout": "soon"}, "timeout='soon'"),
        ({"sync_interval": "often"}, "sync_interval='often'"),
        ({"virtual_nodes": 0}, "virtual_nodes=0"),
        ({"virtual_nodes": "0"}, "virtual_nodes='0': expected at least 1"),
        ({"virtual_nodes": "many"}, "virtual_nodes='many': expected an integer"),
        ({"fallback_to_ufs": "nope"}, "fallback_to_ufs='nope': expected true or false"),
        ({"timeout": "nan"}, "timeout='nan'"),
        ({"timeout": "-1"}, "timeout='-1'"),
    ],
)
def test_bad_options_name_themselves(options: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ClientOptions.resolve(client_config(), **options)  # type: ignore[arg-type]


def test_explicit_http_urls_are_kept() -> None:
    options = ClientOptions.resolve(client_config(), workers="https://w.example:443")
    assert options.workers == ("https://w.example:443",)


def test_every_client_setting_is_a_storage_option_by_short_name_key_or_alias() -> None:
    config = with_storage_options(
        client_config(),
        {
            "etcd_endpoints": ["http://e1:2379", "http://e2:2379"],
            "etcd_timeout": "5s",
            "cluster_name": "lake",
            "read_chunk_size": "4MB",
            "retry_max_attempts": 2,
            "near_cache_enabled": False,
            "dora.user.client.connect.timeout": "500ms",
            "alluxio.user.file.metadata.sync.interval": "30s",
        },
    )
    options = ClientOptions.resolve(config)
    assert options.etcd_endpoints == ("http://e1:2379", "http://e2:2379")
    assert (options.etcd_timeout_s, options.cluster_name) == (5.0, "lake")
    assert (options.read_chunk_size, options.retry_attempts) == (4 << 20, 2)
    assert (options.connect_timeout_s, options.sync_interval) == (0.5, "30s")
    assert config.get(NEAR_CACHE) is False


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"etcd_endpoint": "http://e:1"}, "option 'etcd_endpoint' .*'etcd_endpoints'"),
        ({"dora.user.client.read.chunk": "1MB"}, "did you mean 'dora.user.client.read.chunk.size'"),
        ({"read_chunk_size": "4XB"}, "'4XB' for 'dora.user.client.read.chunk.size'.*option"),
        ({"retry_max_attempts": "often"}, "'dora.user.client.retry.max.attempts'.*an integer"),
        ({"dora.worker.page.store.dirs": "/x"}, "not a client setting"),
        ({"dora.user.file.readtype.default": "NO_CACHE"}, "not a client setting"),
        ({"etcd_timeout": {"s": 1}}, "expected text, a number, a boolean or a list"),
    ],
)  # fmt: skip
def test_a_bad_storage_option_names_itself_as_the_site_file_would(
    options: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        with_storage_options(client_config(), options)


def test_a_client_leaves_the_workers_keys_to_the_worker(tmp_path: Path) -> None:
    """The client's own registry (no server code imported): a site file and environment shared
    with a worker load, the worker's keys skipped; a misspelt client key is still an error."""
    site = tmp_path / "dora-site.properties"
    site.write_text("dora.worker.page.store.dirs=/pages\ndora.user.client.read.parallelism=3\n")
    env = {"DORA_CONF_DIR": str(tmp_path), "DORA_WORKER_HTTP_PORT": "9"}
    config = load_config(client_registry(), environ=env)
    assert ClientOptions.resolve(config).read_parallelism == 3
    assert "dora.worker.http.port" not in {key.name for key in config.registry}
    site.write_text("dora.user.client.read.paralelism=3\n")
    with pytest.raises(ConfigError, match="did you mean 'dora.user.client.read.parallelism'"):
        load_config(client_registry(), environ=env)
