"""Naming files for the ``dora`` filesystem.

Inside the filesystem a file is always its full UFS URI (``s3://bucket/key``,
``file:///data/x``): that is what the worker serves and what the hash ring is keyed by. Callers
may also write ``dora://s3://bucket/key`` or ``dora::s3://bucket/key``.

fsspec's URL chaining (``dora::s3://bucket/key``) complicates this: ``fsspec.core.url_to_fs``
strips the inner URL with the *inner* filesystem's rules, so the path it hands back is
``bucket/key`` (or ``/data/x``) and the inner protocol arrives separately, as the
``target_protocol`` constructor argument. A filesystem built that way completes scheme-less paths
with its target protocol, and shows names in that same scheme-less form (its *display* form), as
fsspec's other chained filesystems do: callers such as pyarrow's dataset discovery require every
name found under a directory to start with the directory's path as they gave it.

Because fsspec calls ``_strip_protocol`` both on the class (while un-chaining a URL, before an
instance exists) and on instances (inside nearly every method), :class:`StripProtocol` sends the
instance call to the instance, which knows its target protocol.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fsspec.utils import stringify_path

from ufs import uri as uris
from ufs.errors import UfsInvalidPath
from worker.client.errors import InvalidRequest

PROTOCOL = "dora"
_PREFIXES = (PROTOCOL + "::", PROTOCOL + "://")


def strip_dora(path: str) -> str:
    """``path`` without any leading ``dora://`` or ``dora::``."""
    text = path
    while text.startswith(_PREFIXES):
        text = (
            text.split("::", 1)[1] if text.startswith(_PREFIXES[0]) else text[len(_PREFIXES[1]) :]
        )
    return text


def to_uri(path: str, target_protocol: str | None = None) -> str:
    """The canonical full UFS URI for ``path``.

    A path without a scheme takes ``target_protocol`` (``bucket/key`` -> ``s3://bucket/key``);
    without one, only an absolute local path is accepted (``/data/x`` -> ``file:///data/x``).
    Raises InvalidRequest (a ValueError) for anything else, or for a URI with ``..``.
    """
    text = strip_dora(stringify_path(path))
    if "://" not in text:
        if target_protocol and target_protocol != "file":
            text = f"{target_protocol}://{text.lstrip('/')}"
        elif text.startswith("/"):
            text = "file://" + text
        else:
            raise InvalidRequest(
                f"invalid path {path!r}: expected a full URI such as s3://bucket/key "
                "or dora::s3://bucket/key"
            )
    try:
        return uris.normalize(text)
    except UfsInvalidPath as exc:
        raise InvalidRequest(str(exc)) from exc


def class_strip(path: Any) -> Any:
    """fsspec's class-level ``_strip_protocol``: drop the ``dora`` prefix and normalize what is
    already a full URI. A scheme-less path is returned as it is (only an instance knows its
    target protocol); an empty one (the ``dora://`` of a chained URL) stays empty, which is how
    fsspec knows to pass the inner URL's path on."""
    if isinstance(path, list | tuple):
        return [class_strip(item) for item in path]
    text = strip_dora(stringify_path(path))
    if "://" in text:
        return to_uri(text)
    return text.rstrip("/")


def display_name(uri: str, target_protocol: str | None) -> str:
    """How a filesystem with ``target_protocol`` shows ``uri``: without the scheme when it is
    the target protocol's (``s3://bucket/key`` -> ``bucket/key``, ``file:///x`` -> ``/x``),
    else the full URI."""
    if not target_protocol:
        return uri
    scheme, _, rest = uri.partition("://")
    return rest if scheme == target_protocol else uri


class StripProtocol:
    """A ``_strip_protocol`` that is :func:`class_strip` on the class and the instance's
    ``strip_path`` method on an instance (see the module docstring)."""

    def __get__(self, instance: Any, owner: type | None = None) -> Callable[[Any], Any]:
        if instance is None:
            return class_strip
        strip: Callable[[Any], Any] = instance.strip_path
        return strip
