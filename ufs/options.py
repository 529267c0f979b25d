"""How the UFS adapter reaches its storage: one options object, built once from properties."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

from config import Config
from ufs import keys
from ufs.kinds import kinds

T = TypeVar("T")


@dataclass(frozen=True)
class UfsOptions:
    """How to reach the under storage; built from properties with :meth:`from_config`.

    The fields are shared by every kind; ``kinds`` holds each storage kind's own options
    (:class:`ufs.kinds.s3.S3Options`, ...), one value per type, which :meth:`of` finds."""

    retry_attempts: int = 3
    retry_base_delay_ms: int = 100
    connect_timeout_ms: int = 5000
    read_timeout_ms: int = 60000
    call_deadline_ms: int = 10000
    append_rewrite_max_bytes: int = 64 << 20
    kinds: tuple[object, ...] = ()

    @classmethod
    def from_config(cls, config: Config) -> UfsOptions:
        own = (kind.options(config) for kind in kinds())
        return cls(
            retry_attempts=config.get(keys.RETRY_ATTEMPTS),
            retry_base_delay_ms=config.get(keys.RETRY_BASE_DELAY),
            connect_timeout_ms=config.get(keys.CONNECT_TIMEOUT),
            read_timeout_ms=config.get(keys.READ_TIMEOUT),
            call_deadline_ms=config.get(keys.CALL_DEADLINE),
            append_rewrite_max_bytes=config.get(keys.APPEND_REWRITE_MAX),
            kinds=tuple(options for options in own if options is not None),
        )

    def of(self, kind: type[T]) -> T:
        """The options of type ``kind`` held here, else that type's defaults."""
        return next((o for o in self.kinds if isinstance(o, kind)), None) or kind()
