"""Canonical UFS URIs and traversal checks (mount roots are :mod:`ufs.roots`).

A file is named by its full URI (``s3://bucket/a/b.parquet``, ``file:///data/x.csv``). The
canonical form has a lower-case scheme, no trailing slash (except a bare root such as
``file:///``) and no empty, ``.`` or ``..`` segments: those are rejected, never resolved.
"""

from __future__ import annotations

import re
from urllib.parse import unquote

from ufs.errors import UfsInvalidPath

_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*$")
# Enough rounds to expose a traversal hidden under several layers of percent-encoding.
_UNQUOTE_ROUNDS = 3
S3_SCHEMES = ("s3", "s3a")
"""Schemes served by the S3 backend (``ufs.s3``)."""
_BAD_SEGMENTS = frozenset({"", ".", ".."})


def _decoded_forms(text: str) -> list[str]:
    if "%" not in text:
        return [text]
    forms = [text]
    for _ in range(_UNQUOTE_ROUNDS):
        decoded = unquote(forms[-1])
        if decoded == forms[-1]:
            break
        forms.append(decoded)
    return forms


def split(uri: str) -> tuple[str, str]:
    """Split a URI into (scheme, path). A bare absolute path is a ``file`` URI."""
    scheme, sep, rest = uri.partition("://")
    if not sep:
        if uri.startswith("/"):
            return "file", uri
        raise UfsInvalidPath(f"invalid path {uri!r}: expected a full URI such as s3://bucket/key")
    scheme = scheme.lower()
    if not _SCHEME.match(scheme):
        raise UfsInvalidPath(f"invalid path {uri!r}: bad scheme {scheme!r}")
    if scheme == "file" and not rest.startswith("/"):
        raise UfsInvalidPath(f"invalid path {uri!r}: a file URI is file:///absolute/path")
    return scheme, rest


def normalize(uri: str) -> str:
    """The canonical form of ``uri``; raises UfsInvalidPath for traversal or a malformed URI."""
    if not uri or not uri.isprintable():
        raise UfsInvalidPath(f"invalid path {uri!r}: empty or contains control characters")
    scheme, path = split(uri)
    body = path[1:] if scheme == "file" else path
    body = body.rstrip("/")
    if scheme != "file" and not body:
        raise UfsInvalidPath(f"invalid path {uri!r}: no bucket or host")
    if body:
        _check_segments(uri, scheme, body)
    return f"{scheme}:///{body}" if scheme == "file" else f"{scheme}://{body}"


def child(directory: str, name: str) -> str:
    """The canonical URI of entry ``name`` of canonical directory ``directory``: the same as
    ``normalize(directory + "/" + name)``, for the price of checking ``name`` alone (no
    percent-escape can span the ``/`` before it, so what held for the directory still holds).
    Raises UfsInvalidPath if ``name`` is not one segment a canonical URI may end with."""
    uri = directory + name if directory.endswith("/") else f"{directory}/{name}"
    if "/" in name or not name.isprintable():
        raise UfsInvalidPath(f"invalid path {uri!r}: {name!r} is not one printable segment")
    # A name with neither escapes nor backslashes is its only form: the full check is needed
    # only for those, and for the names it refuses outright (to say why).
    if name in _BAD_SEGMENTS or "%" in name or "\\" in name:
        _check_segments(uri, directory.partition(":")[0], name)
    return uri


def _check_segments(uri: str, scheme: str, body: str) -> None:
    """Refuse a body with an empty, ``.`` or ``..`` segment (in any decoded form), or a
    backslash in a ``file`` path."""
    for form in _decoded_forms(body):
        segments = form.split("/")
        if not _BAD_SEGMENTS.isdisjoint(segments):
            segment = next(segment for segment in segments if segment in _BAD_SEGMENTS)
            what = "an empty segment" if segment == "" else f"a {segment!r} segment"
            raise UfsInvalidPath(f"invalid path {uri!r}: contains {what}")
        if "\\" in form and scheme == "file":
            raise UfsInvalidPath(f"invalid path {uri!r}: contains a backslash")


def parent(uri: str) -> str | None:
    """The parent directory of a canonical URI, or None for a root (``s3://bucket``,
    ``file:///``)."""
    scheme, path = split(uri)
    body = path[1:] if scheme == "file" else path
    if "/" not in body:
        if scheme == "file" and body:
            return "file:///"
        return None
    head = body.rsplit("/", 1)[0]
    return f"{scheme}:///{head}" if scheme == "file" else f"{scheme}://{head}"


def name(uri: str) -> str:
    """The last segment of a canonical URI (the bucket for a bucket root, "" for ``file:///``)."""
    return uri.rstrip("/").rsplit("/", 1)[-1] if not uri.endswith(":///") else ""


def is_under(uri: str, prefix: str) -> bool:
    """Whether canonical ``uri`` is ``prefix`` or inside it, on a segment boundary."""
    if uri == prefix:
        return True
    base = prefix if prefix.endswith("/") else prefix + "/"
    return uri.startswith(base)
