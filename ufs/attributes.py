"""What an object store keeps of an object besides its bytes: the standard headers it answers
with (``Content-Type``, ``Cache-Control``, ...) and the user's metadata (S3's ``x-amz-meta-*``).

Only some stores keep them (S3 does; a local directory does not): a backend that does is an
:class:`AttributeStore`, and the facade (``ufs.adapter.Ufs``) passes attributes to it and
asks it for them; every other store writes the bytes alone and answers :data:`NO_ATTRIBUTES`."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from ufs.deadline import Deadline
from ufs.status import UfsStatus

HEADERS = (
    "Content-Type",
    "Cache-Control",
    "Content-Disposition",
    "Content-Encoding",
    "Content-Language",
    "Expires",
)
"""The standard headers an object store keeps with an object, as HTTP spells them."""
USER_PREFIX = "x-amz-meta-"


@dataclass(frozen=True)
class Attributes:
    """An object's kept headers (names as in :data:`HEADERS`) and user metadata (names
    lowercase, without ``x-amz-meta-``). Immutable."""

    headers: Mapping[str, str] = field(default_factory=dict)
    user: Mapping[str, str] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.headers or self.user)

    @classmethod
    def from_headers(cls, headers: Mapping[str, str]) -> Attributes:
        """The attributes HTTP ``headers`` (any case of name) carry."""
        lowered = {name.lower(): value for name, value in headers.items()}
        kept = {name: lowered[name.lower()] for name in HEADERS if name.lower() in lowered}
        user = {
            name[len(USER_PREFIX) :]: value
            for name, value in lowered.items()
            if name.startswith(USER_PREFIX)
        }
        return cls(kept, user)

    def to_headers(self) -> dict[str, str]:
        """As HTTP headers: the kept ones, then ``x-amz-meta-<name>`` for each user's."""
        shown = dict(self.headers)
        shown.update((USER_PREFIX + name, value) for name, value in self.user.items())
        return shown


NO_ATTRIBUTES = Attributes()


@runtime_checkable
class AttributeStore(Protocol):
    """A backend that keeps attributes with its objects. Thread-safe."""

    def write_attributed(
        self,
        uri: str,
        chunks: Iterator[bytes],
        step: Callable[[], Deadline],
        attributes: Attributes,
    ) -> UfsStatus:
        """:meth:`ufs.backend.UfsBackend.write_stream`, the object stored with ``attributes``."""
        ...

    def attributes(self, uri: str, version: str, deadline: Deadline) -> Attributes:
        """The attributes of ``uri`` at ``version`` (UfsVersionChanged when it is at another;
        FileNotFoundError when it is gone)."""
        ...
