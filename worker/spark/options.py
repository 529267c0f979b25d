"""The ``dora`` data source's options, parsed once on the driver and carried to executors.

Options whose key starts with ``dora.`` or ``alluxio.`` are worker settings (``-D`` defines for
the sidecar: mount roots, UFS endpoint and credentials, page store size, ...); the rest steer
the read. Spark hands options over case-insensitively, so lookups here are too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from config.units import format_duration, parse_duration, parse_size
from ufs import keys as ufs_keys
from ufs import uri as uris
from worker.common import client_keys
from worker.spark.sidecar import ensure_worker

if TYPE_CHECKING:
    from worker.client.filesystem import DoraFileSystem

FORMATS = ("parquet", "csv", "json", "text", "binaryFile", "files")
SETTING_PREFIXES = ("dora.", "alluxio.")
DEFAULT_MAX_PARTITION_BYTES = 128 << 20
# Spark's spark.sql.files.openCostInBytes: opening a file costs as much as reading this much.
DEFAULT_OPEN_COST_BYTES = 4 << 20
DEFAULT_BATCH_ROWS = 64 * 1024


class OptionError(ValueError):
    """A data source option is missing or malformed; the message names it."""


def _flag(options: Mapping[str, str], name: str, default: bool) -> bool:
    text = options.get(name)
    if text is None:
        return default
    if text.strip().lower() not in ("true", "false"):
        raise OptionError(f"option {name!r} must be true or false, not {text!r}")
    return text.strip().lower() == "true"


def _size(options: Mapping[str, str], name: str, default: int) -> int:
    text = options.get(name)
    if text is None:
        return default
    try:
        value = parse_size(text)
    except ValueError as exc:
        raise OptionError(f"option {name!r}: {exc}") from None
    if value <= 0:
        raise OptionError(f"option {name!r} must be positive, not {text!r}")
    return value


def _count(options: Mapping[str, str], name: str, default: int) -> int:
    text = options.get(name)
    if text is None:
        return default
    if not text.strip().isdigit() or int(text) <= 0:
        raise OptionError(f"option {name!r} must be a positive whole number, not {text!r}")
    return int(text)


def _sync_interval(options: Mapping[str, str]) -> str | None:
    text = options.get("sync_interval")
    if text is None:
        return None
    try:
        return format_duration(parse_duration(text, allow_never=True))
    except ValueError as exc:
        raise OptionError(f"option 'sync_interval': {exc}") from None


def default_root(path: str) -> str:
    """The mount root a sidecar serves when none is configured: the bucket of an object-store
    path, the path itself on a local file system (never all of ``file:///``)."""
    canonical = uris.normalize(path)
    scheme, rest = uris.split(canonical)
    if scheme == "file":
        return canonical
    return f"{scheme}://{rest.split('/', 1)[0]}"


@dataclass(frozen=True)
class ReadOptions:
    """Everything a read needs on an executor; picklable.

    ``workers`` (``host:port`` list) points at a worker that already runs, e.g. the sidecar
    container of the Helm chart; otherwise each executor uses (and if need be starts) its
    host's sidecar with ``defines``.
    """

    path: str
    format: str = "parquet"
    sync_interval: str | None = None
    max_partition_bytes: int = DEFAULT_MAX_PARTITION_BYTES
    open_cost_bytes: int = DEFAULT_OPEN_COST_BYTES
    batch_rows: int = DEFAULT_BATCH_ROWS
    header: bool = False
    sep: str = ","
    filter_pushdown: bool = False
    state_dir: str | None = None
    workers: tuple[str, ...] = ()
    token: str | None = None
    defines: tuple[str, ...] = field(default=())

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> ReadOptions:
        """Raise OptionError for a missing path, an unknown format or a malformed value."""
        lowered = {key.lower(): value for key, value in options.items()}
        path = lowered.get("path")
        if not path:
            raise OptionError("the dora data source needs a path: .load('s3://bucket/prefix/')")
        fmt = _format(lowered.get("format", "parquet"))
        defines = [f"{k}={v}" for k, v in lowered.items() if k.startswith(SETTING_PREFIXES)]
        workers = tuple(w.strip() for w in lowered.get("workers", "").split(",") if w.strip())
        if not workers and not any(d.startswith(ufs_keys.ROOTS.name + "=") for d in defines):
            defines.append(f"{ufs_keys.ROOTS.name}={default_root(path)}")
        return cls(
            path=uris.normalize(path),
            format=fmt,
            sync_interval=_sync_interval(lowered),
            max_partition_bytes=_size(lowered, "maxpartitionbytes", DEFAULT_MAX_PARTITION_BYTES),
            open_cost_bytes=_size(lowered, "opencostinbytes", DEFAULT_OPEN_COST_BYTES),
            batch_rows=_count(lowered, "batchrows", DEFAULT_BATCH_ROWS),
            header=_flag(lowered, "header", False),
            sep=lowered.get("sep", lowered.get("delimiter", ",")),
            filter_pushdown=_flag(lowered, "filterpushdown", False),
            state_dir=lowered.get("state_dir"),
            workers=workers,
            token=lowered.get("token"),
            defines=tuple(sorted(defines)),
        )

    def filesystem(self) -> DoraFileSystem:
        """A client for this host's worker: the configured one, else the sidecar (started on
        first use, owned by the executor JVM this code runs under)."""
        if self.workers:
            from worker.client.filesystem import DoraFileSystem

            given = dict(define.split("=", 1) for define in self.defines)
            files = (client_keys.USER_CA, client_keys.USER_CERT, client_keys.USER_KEY)
            # Storage options by the keys' full names (any name a site file takes).
            tls: dict[str, Any] = {key.name: given[key.name] for key in files if key.name in given}
            return DoraFileSystem(
                workers=list(self.workers),
                token=self.token,
                sync_interval=self.sync_interval,
                fallback_to_ufs=False,
                **tls,
            )
        return ensure_worker(
            self.defines, state_dir=self.state_dir, sync_interval=self.sync_interval
        )


def _format(text: str) -> str:
    by_lower = {name.lower(): name for name in FORMATS}
    fmt = by_lower.get(text.strip().lower())
    if fmt is None:
        raise OptionError(f"unknown format {text!r}; expected one of {', '.join(FORMATS)}")
    return fmt
