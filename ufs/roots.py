"""Mount roots: the security boundary of the worker (``dora.worker.ufs.roots``).

A URI is served only if it is named under a root and — for ``file`` URIs — what it names
after every symlink is followed lies under a root too (the roots resolved the same way). So a
link planted inside a root (``ln -s /etc/passwd R/passwd``, a linked directory, a link whose
target climbs out with ``..``) cannot carry any operation outside; links that stay inside are
served as the names they are.

Residual race, stated honestly: the check runs before the operation (check-then-use). A local
user who can rename entries inside a root could swap a checked path for a link between the
two. Closing that fully needs resolution and use in one kernel call (``openat2`` with
``RESOLVE_BENEATH``), which Python does not offer; only someone who may already write inside
the root can try. Where it is cheap it is narrowed: the worker's reads are pinned to a version
and the local backend checks that version (size, mtime_ns) on the very descriptor it reads
from, so a file swapped after the check yields a version change, not the other file's bytes
(short of one with the same size and mtime to the nanosecond); recursive deletes never
follow links at all (``shutil.rmtree`` works on descriptors). Writes, renames, mkdir and
deletes of a swapped path remain exposed for the width of one request.
"""

from __future__ import annotations

from collections.abc import Iterable

from ufs import uri as uris
from ufs.errors import UfsError, UfsOutsideRoots
from ufs.local import path_of, resolve
from ufs.mapping import translate
from ufs.status import UfsStatus


class MountRoots:
    """The URIs a worker may serve. Immutable and thread-safe.

    ``roots`` are the canonical roots as configured; file roots are resolved once, here, so a
    root that is itself a link (``/data -> /mnt/disk``) works, and a root re-pointed later
    refuses rather than follows.
    """

    def __init__(self, roots: Iterable[str]) -> None:
        self.roots = tuple(uris.normalize(root) for root in roots)
        self._real_roots = tuple(
            resolve(path_of(root)) for root in self.roots if uris.split(root)[0] == "file"
        )

    def check(self, uri: str) -> str:
        """Normalize ``uri`` and return it if it, and what it resolves to, lie under a root.

        Raises UfsInvalidPath for a malformed or traversing URI or a symlink loop,
        UfsOutsideRoots otherwise; the URI returned is the name, not its resolution.
        """
        canonical = uris.normalize(uri)
        if not any(uris.is_under(canonical, root) for root in self.roots):
            allowed = ", ".join(self.roots) or "none configured (set dora.worker.ufs.roots)"
            raise UfsOutsideRoots(f"path {canonical!r} is outside the mount roots ({allowed})")
        scheme, path = uris.split(canonical)
        if scheme == "file" and not self._resolves_inside(canonical, path):
            # The target is not named: it may be something the caller should not learn.
            raise UfsOutsideRoots(
                f"path {canonical!r} leads through a symbolic link outside the mount roots"
            )
        return canonical

    def _resolves_inside(self, canonical: str, path: str) -> bool:
        try:
            real = resolve(path)
        except OSError as exc:
            raise translate(exc, "resolve", canonical) from exc
        return any(
            real == root or real.startswith(root.rstrip("/") + "/") for root in self._real_roots
        )

    def visible(self, entries: Iterable[UfsStatus]) -> list[UfsStatus]:
        """The listing entries that may be served; the others are left out.

        Left out rather than failing the listing: a single link planted in a shared directory
        must not deny everyone its listing (and a load job of it), and an entry left out
        leaks nothing — a link's status is its target's, so even its size would tell.
        """
        return [entry for entry in entries if self._allows(entry.uri)]

    def _allows(self, uri: str) -> bool:
        try:
            self.check(uri)
        except UfsError:
            return False
        return True
