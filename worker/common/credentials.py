"""The etcd user a worker or client authenticates as: apart from the etcd client, so that a
client carries its credentials without importing it (``tests/worker/client/test_imports.py``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from config import Config
from worker.common import client_keys


@dataclass(frozen=True)
class Credentials:
    """An etcd user and its password."""

    user: str
    password: str = field(repr=False)

    @classmethod
    def from_config(cls, config: Config) -> Credentials | None:
        """From ``dora.cluster.etcd.user`` and ``.password`` (None without a user)."""
        user = config.get(client_keys.ETCD_USER)
        return cls(user, config.get(client_keys.ETCD_PASSWORD) or "") if user else None
