"""How the UFS adapter reaches its storage: one options object, built once from properties."""

from __future__ import annotations

from dataclasses import dataclass

from config import Config
from ufs import keys


@dataclass(frozen=True)
class UfsOptions:
    """How to reach the under storage; built from properties with :meth:`from_config`."""

    s3_endpoint: str | None = None
    s3_region: str | None = None
    s3_access_key_id: str | None = None
    s3_secret_access_key: str | None = None
    s3_anonymous: bool = False
    retry_attempts: int = 3
    retry_base_delay_ms: int = 100
    connect_timeout_ms: int = 5000
    read_timeout_ms: int = 60000
    call_deadline_ms: int = 10000
    append_rewrite_max_bytes: int = 64 << 20

    @classmethod
    def from_config(cls, config: Config) -> UfsOptions:
        return cls(
            s3_endpoint=config.get(keys.S3_ENDPOINT) or None,
            s3_region=config.get(keys.S3_REGION) or None,
            s3_access_key_id=config.get(keys.S3_ACCESS_KEY_ID) or None,
            s3_secret_access_key=config.get(keys.S3_SECRET_ACCESS_KEY) or None,
            s3_anonymous=config.get(keys.S3_ANONYMOUS),
            retry_attempts=config.get(keys.RETRY_ATTEMPTS),
            retry_base_delay_ms=config.get(keys.RETRY_BASE_DELAY),
            connect_timeout_ms=config.get(keys.CONNECT_TIMEOUT),
            read_timeout_ms=config.get(keys.READ_TIMEOUT),
            call_deadline_ms=config.get(keys.CALL_DEADLINE),
            append_rewrite_max_bytes=config.get(keys.APPEND_REWRITE_MAX),
        )
