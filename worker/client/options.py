"""The client's options: constructor arguments over site properties (``dora.user.client.*``,
``dora.user.workers``), validated once when a filesystem is created."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypeVar
from urllib.parse import urlsplit

from config import Config, Source
from config.keys import PropertyKey
from config.units import parse_duration
from worker import keys
from worker.cluster import keys as cluster_keys
from worker.meta.keys import SYNC_INTERVAL
from worker.tls import keys as tls_keys
from worker.tls.client import PemFiles, etcd_files, user_files

SyncInterval = int | str
T = TypeVar("T")


@dataclass(frozen=True)
class ClientOptions:
    """How a client reaches its workers. Immutable.

    ``workers`` are base URLs (``http://host:port`` or ``https://``) in the order given,
    ``ring_names`` the ``host:port`` names the hash ring is keyed by. ``tls`` is what https://
    workers are verified with and the certificate presented to them; ``allow_plaintext`` lets
    the token go over http:// beyond loopback. ``sync_interval`` is the default sent with
    metadata and read calls (as the worker parses it), or None to leave the worker's default.
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
    tls: PemFiles = field(default_factory=PemFiles)
    allow_plaintext: bool = False
    etcd_tls: PemFiles = field(default_factory=PemFiles)

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
        tls_ca_file: str | None = None,
        tls_cert_file: str | None = None,
        tls_key_file: str | None = None,
    ) -> ClientOptions:
        """Options from ``config``, each overridden by the matching argument when it is given.

        Every argument may also be given as text (Polars passes ``storage_options`` only as
        strings): ``workers`` comma-separated, ``timeout`` seconds or a duration,
        ``fallback_to_ufs`` true/false, ``virtual_nodes`` an integer. ``tls_*_file`` override
        ``dora.user.tls.*.file``.

        Raises ValueError naming the option for a malformed value.
        """
        urls = _worker_urls(workers if workers is not None else config.get(keys.USER_WORKERS))
        timeout_s = (
            config.get(keys.USER_CLIENT_TIMEOUT) / 1000
            if timeout is None
            else _seconds("timeout", timeout)
        )
        nodes = (
            config.get(keys.USER_CLIENT_VIRTUAL_NODES)
            if virtual_nodes is None
            else _parsed("virtual_nodes", virtual_nodes, keys.USER_CLIENT_VIRTUAL_NODES)
        )
        if nodes < 1:
            raise ValueError(f"virtual_nodes={nodes!r}: expected at least 1")
        fallback = (
            config.get(keys.USER_CLIENT_FALLBACK_TO_UFS)
            if fallback_to_ufs is None
            else bool(_parsed("fallback_to_ufs", fallback_to_ufs, keys.USER_CLIENT_FALLBACK_TO_UFS))
        )
        return cls(
            workers=urls,
            ring_names=tuple(urlsplit(url).netloc for url in urls),
            token=token if token is not None else config.get(keys.USER_CLIENT_TOKEN) or None,
            timeout_s=timeout_s,
            connect_timeout_s=min(timeout_s, config.get(keys.USER_CLIENT_CONNECT_TIMEOUT) / 1000),
            retry_attempts=config.get(keys.USER_CLIENT_RETRY_ATTEMPTS),
            fallback_to_ufs=fallback,
            virtual_nodes=nodes,
            read_chunk_size=config.get(keys.USER_CLIENT_READ_CHUNK_SIZE),
            read_parallelism=config.get(keys.USER_CLIENT_READ_PARALLELISM),
            sync_interval=_default_sync_interval(config, sync_interval),
            etcd_endpoints=_etcd_endpoints(config),
            cluster_name=config.get(cluster_keys.CLUSTER_NAME),
            etcd_timeout_s=config.get(cluster_keys.ETCD_TIMEOUT) / 1000,
            tls=user_files(config, tls_ca_file, tls_cert_file, tls_key_file),
            allow_plaintext=config.get(tls_keys.USER_ALLOW_PLAINTEXT),
            etcd_tls=etcd_files(config),
        )


def _etcd_endpoints(config: Config) -> tuple[str, ...]:
    endpoints: list[str] = config.get(cluster_keys.ETCD_ENDPOINTS)
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
    setting = config.setting(SYNC_INTERVAL)
    # Only a value the user set is sent: otherwise the worker's own default applies.
    if setting.source is Source.DEFAULT or setting.text is None:
        return None
    return sync_interval_param(setting.text)


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
