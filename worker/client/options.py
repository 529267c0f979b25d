"""The client's options: constructor arguments over site properties (``dora.user.client.*``,
``dora.user.workers``), validated once when a filesystem is created.

Every client setting is also a storage option (:func:`with_storage_options`), so pandas, Dask,
DuckDB or Polars users pass ``storage_options={"etcd_endpoints": "http://etcd:2379"}``: each
``dora.user.*`` key and each cluster key a client reads (``dora.cluster.etcd.*``,
``dora.cluster.name``), by its name, its Alluxio alias or its short name
(:func:`short_name`: ``etcd_endpoints``, ``read_chunk_size``, ``file_metadata_sync_interval``).
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import urlsplit

from config import Config, ConfigError, Registry, Source
from config.keys import PropertyKey
from config.units import parse_duration
from ufs import keys as ufs_keys
from worker.common import client_keys
from worker.common.tls import PemFiles, etcd_files, user_files

SyncInterval = int | str
T = TypeVar("T")


@dataclass(frozen=True)
class ClientOptions:
    """How a client reaches its workers. Immutable.

    ``workers`` are base URLs (``http://host:port`` or ``https://``) in the order given,
    ``ring_names`` the ``host:port`` names the hash ring is keyed by. ``tls`` is what https://
    workers are verified with and the certificate presented to them; ``allow_plaintext`` lets
    the token go over http:// beyond loopback. ``sync_interval`` is the default sent with
    metadata and read calls (as the worker parses it), or None to leave the worker's default;
    ``serve_stale`` likewise (serve while revalidating, sent with status and read calls).
    """

    workers: tuple[str, ...]
    ring_names: tuple[str, ...]
    token: str | None
    timeout_s: float
    connect_timeout_s: float
    retry_attempts: int
    fallback_to_ufs: bool
    virtual_nodes: int
    read_chunk_size: int
    read_parallelism: int
    sync_interval: str | None
    # With endpoints, the ring follows the workers registered in etcd (worker.cluster).
    etcd_endpoints: tuple[str, ...] = ()
    cluster_name: str = ""
    etcd_timeout_s: float = 2.0
    etcd_user: str | None = None
    etcd_password: str | None = field(default=None, repr=False)
    tls: PemFiles = field(default_factory=PemFiles)
    allow_plaintext: bool = False
    etcd_tls: PemFiles = field(default_factory=PemFiles)
    serve_stale: bool | None = None

    @classmethod
    def resolve(
        cls,
        config: Config,
        *,
        workers: Sequence[str] | str | None = None,
        token: str | None = None,
        timeout: float | str | None = None,
        sync_interval: SyncInterval | None = None,
        fallback_to_ufs: bool | str | None = None,
        virtual_nodes: int | str | None = None,
    ) -> ClientOptions:
        """Options from ``config``, each overridden by the matching argument when it is given.

        Every argument may also be given as text (Polars passes ``storage_options`` only as
        strings): ``workers`` comma-separated, ``timeout`` seconds or a duration,
        ``fallback_to_ufs`` true/false, ``virtual_nodes`` an integer. The TLS files are the
        ``dora.user.tls.*.file`` keys (storage options ``tls_ca_file``, ``tls_cert_file``,
        ``tls_key_file`` set them like any other).

        Raises ValueError naming the option for a malformed value.
        """
        urls = _worker_urls(
            workers if workers is not None else config.get(client_keys.USER_WORKERS)
        )
        timeout_s = (
            config.get(client_keys.USER_CLIENT_TIMEOUT) / 1000
            if timeout is None
            else _seconds("timeout", timeout)
        )
        return cls(
            workers=urls,
            ring_names=tuple(urlsplit(url).netloc for url in urls),
            token=token if token is not None else config.get(client_keys.USER_CLIENT_TOKEN) or None,
            timeout_s=timeout_s,
            connect_timeout_s=min(
                timeout_s, config.get(client_keys.USER_CLIENT_CONNECT_TIMEOUT) / 1000
            ),
            retry_attempts=config.get(client_keys.USER_CLIENT_RETRY_ATTEMPTS),
            fallback_to_ufs=_fallback_to_ufs(config, fallback_to_ufs),
            virtual_nodes=_virtual_nodes(config, virtual_nodes),
            read_chunk_size=config.get(client_keys.USER_CLIENT_READ_CHUNK_SIZE),
            read_parallelism=config.get(client_keys.USER_CLIENT_READ_PARALLELISM),
            sync_interval=_default_sync_interval(config, sync_interval),
            etcd_endpoints=_etcd_endpoints(config),
            cluster_name=config.get(client_keys.CLUSTER_NAME),
            etcd_timeout_s=config.get(client_keys.ETCD_TIMEOUT) / 1000,
            etcd_user=config.get(client_keys.ETCD_USER),
            etcd_password=config.get(client_keys.ETCD_PASSWORD),
            tls=user_files(config),
            allow_plaintext=config.get(client_keys.USER_ALLOW_PLAINTEXT),
            etcd_tls=etcd_files(config),
            serve_stale=_user_set(config, client_keys.SERVE_STALE),
        )


def _virtual_nodes(config: Config, given: int | str | None) -> int:
    """The ring's virtual nodes per worker: ``given`` (an integer or its text), else the key."""
    key = client_keys.USER_CLIENT_VIRTUAL_NODES
    nodes = config.get(key) if given is None else _parsed("virtual_nodes", given, key)
    if nodes < 1:
        raise ValueError(f"virtual_nodes={nodes!r}: expected at least 1")
    return nodes


def _fallback_to_ufs(config: Config, given: bool | str | None) -> bool:
    """Whether the client reads the UFS itself when no worker answers: ``given`` (a boolean or
    its text), else the key."""
    key = client_keys.USER_CLIENT_FALLBACK_TO_UFS
    return config.get(key) if given is None else bool(_parsed("fallback_to_ufs", given, key))


# The namespaces whose every key a client holds (worker.common.client_keys): an unknown key in
# them is a mistake; any other key a client does not read is a worker's.
CLIENT_SCOPE = ("dora.user.", "dora.cluster.etcd.", "alluxio.user.")


def client_registry() -> Registry:
    """The keys a client reads: its own and the UFS's (for its fallback). A site file or an
    environment variable naming a worker's key is left to the worker (``Registry.scope``); the
    entry points (the worker, the ``dora`` command) build the full registry instead."""
    return Registry(scope=CLIENT_SCOPE).extend(client_keys.KEYS).extend(ufs_keys.KEYS)


# Short names: the key's name without its prefix, dots as underscores, after a lead word.
_SHORT_PREFIXES = (
    ("dora.user.client.", ""),
    ("dora.user.", ""),
    ("dora.cluster.etcd.", "etcd_"),
    ("dora.cluster.name", "cluster_name"),
)
# dora.user.* keys that only workers apply (per path): a client given one would ignore it.
_WORKER_SIDE = frozenset({client_keys.READ_TYPE.name})


def short_name(key: PropertyKey[Any]) -> str | None:
    """The storage-option name of a client setting (None: ``key`` is not one)."""
    if key.name in _WORKER_SIDE:
        return None
    for prefix, lead in _SHORT_PREFIXES:
        if key.name.startswith(prefix):
            return lead + key.name.removeprefix(prefix).replace(".", "_")
    return None


def with_storage_options(config: Config, options: Mapping[str, object]) -> Config:
    """``config`` with fsspec storage options applied over every other source, validated as
    the site file is: each names a client setting (by key name, alias or :func:`short_name`)
    and gives its value as text (Polars sends only text) or as a number, a boolean or a list.

    Raises ConfigError (a ValueError) naming the option: an unknown one (with the nearest
    name), a key only workers read, a value the key does not take."""
    shorts = {name: key for key in config.registry if (name := short_name(key)) is not None}
    texts = []
    for given, value in options.items():
        key = shorts.get(given) or _client_key(config, given, shorts)
        texts.append((key, _option_text(given, value), f"storage option {given!r}"))
    return config.overridden(texts)


def _client_key(config: Config, given: str, shorts: Mapping[str, PropertyKey[Any]]) -> Any:
    """The client setting named ``given`` by its key name or alias; ConfigError otherwise."""
    # A key name (dotted, unlike a short name) that is a worker's names no client setting.
    worker_side = "." in given and config.registry.foreign(given)
    try:
        key = None if worker_side else config.registry.lookup(given)
    except ConfigError:
        names = [*shorts, *(key.name for key in shorts.values())]
        near = difflib.get_close_matches(given, names, n=1)
        hint = f"; did you mean {near[0]!r}?" if near else ""
        raise ConfigError(
            f"unknown storage option {given!r} for the dora filesystem{hint}"
        ) from None
    if key is None or short_name(key) is None:
        name = given if key is None else key.name
        raise ConfigError(
            f"storage option {given!r}: {name} is not a client setting (workers read it "
            "from their own properties); a client takes dora.user.*, dora.cluster.etcd.* and "
            "dora.cluster.name"
        )
    return key


def _option_text(given: str, value: object) -> str:
    """A storage option's value as the text a site file would hold."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, list | tuple) and all(isinstance(item, str) for item in value):
        return ",".join(value)
    raise ConfigError(
        f"storage option {given}={value!r}: expected text, a number, a boolean or a list of text"
    )


def _etcd_endpoints(config: Config) -> tuple[str, ...]:
    endpoints: list[str] = config.get(client_keys.ETCD_ENDPOINTS)
    return tuple(endpoints)


def sync_interval_param(value: SyncInterval) -> str:
    """``value`` as the worker's ``sync_interval`` parameter: ms as an int, or a duration such as
    ``30s``; -1 never re-checks, 0 always does. Raises ValueError for anything else."""
    text = str(value).strip()
    try:
        parse_duration(text, allow_never=True)
    except ValueError as exc:
        raise ValueError(f"sync_interval={value!r}: {exc}") from None
    return text


def _default_sync_interval(config: Config, given: SyncInterval | None) -> str | None:
    if given is not None:
        return sync_interval_param(given)
    setting = config.setting(client_keys.SYNC_INTERVAL)
    # Only a value the user set is sent: otherwise the worker's own default applies.
    if setting.source is Source.DEFAULT or setting.text is None:
        return None
    return sync_interval_param(setting.text)


def _user_set(config: Config, key: PropertyKey[T]) -> T | None:
    """``key``'s value when the user set it, None when it is the default (the worker's own
    default and per-path rules then apply)."""
    if config.setting(key).source is Source.DEFAULT:
        return None
    return config.get(key)


def _worker_urls(workers: Sequence[str] | str) -> tuple[str, ...]:
    """Base URLs of ``host:port`` names or ``http(s)://host:port`` URLs, first of each kept."""
    items = workers.split(",") if isinstance(workers, str) else list(workers)
    names = [item.strip().rstrip("/") for item in items if item.strip()]
    if not names:
        raise ValueError("workers: expected at least one worker as host:port")
    return tuple(dict.fromkeys(_base_url(name) for name in names))


def _base_url(name: str) -> str:
    """``http://host:port`` for ``host:port`` (an explicit ``http(s)://`` URL is kept)."""
    if "://" in name:
        parts = urlsplit(name)
        if parts.scheme not in ("http", "https") or not parts.netloc or parts.path:
            raise ValueError(f"workers: {name!r} is not an http(s)://host:port URL")
        return name
    host, sep, port = name.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"workers: {name!r} is not host:port")
    return f"http://{name}"


def _parsed(name: str, value: T | str, key: PropertyKey[T]) -> T:
    """``value``, or text in the form of ``key`` parsed; ValueError naming the option."""
    if not isinstance(value, str):
        return value
    try:
        return key.parse(value)
    except ValueError as exc:
        raise ValueError(f"{name}={value!r}: {exc}") from None


def _seconds(name: str, value: float | str) -> float:
    """Seconds from a number, a number as text (the same seconds), or a duration (``30s``)."""
    if isinstance(value, str):
        try:
            seconds = float(value)
        except ValueError:
            try:
                seconds = parse_duration(value) / 1000
            except ValueError as exc:
                raise ValueError(f"{name}={value!r}: {exc}") from None
    else:
        seconds = float(value)
    if not (seconds > 0 and math.isfinite(seconds)):
        raise ValueError(f"{name}={value!r}: expected a positive number of seconds or a duration")
    return seconds
