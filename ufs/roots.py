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

Cost: a listing (:meth:`MountRoots.visible`) resolves each directory its entries are in once
and reads which of its names are symlinks from one scan of that very directory (a descriptor,
not its name); an entry that is no symlink lies where the directory does, so only links are
resolved one by one, and the window above is no wider for it. A load job's batch of files, a
few of what may be a huge directory, has each name looked up alone through that descriptor
instead (``scan=False``), so a batch costs its own size. Nothing is kept from one call to
the next (a resolution kept longer would stretch that window from one request to the life of
the cache), and whether an entry is a link is read anew rather than carried from the backend's
own scan: a listing the worker serves from its cache may be an hour old, and is checked as the
files are now.
"""

from __future__ import annotations

from collections.abc import Iterable

from ufs import uri as uris
from ufs.errors import UfsError, UfsInvalidPath, UfsOutsideRoots
from ufs.local import path_of, plain_entries, resolve
from ufs.mapping import translate
from ufs.status import UfsStatus

_FILE = "file://"


class MountRoots:
    """The URIs a worker may serve. Immutable and thread-safe.

    ``roots`` are the canonical roots as configured; file roots are resolved once, here, so a
    root that is itself a link (``/data -> /mnt/disk``) works, and a root re-pointed later
    refuses rather than follows. A root may be a whole S3 store (``s3://``, the one
    ``dora.ufs.s3.endpoint`` names): every bucket in it is inside, while the store itself is
    no URI an operation can name (``ufs.uri.normalize`` refuses it).
    """

    def __init__(self, roots: Iterable[str]) -> None:
        self.roots = tuple(_canonical(root) for root in roots)
        self._real_roots = tuple(
            resolve(path_of(root)) for root in self.roots if uris.split(root)[0] == "file"
        )
        # What lies strictly under each root starts with one of these (str.startswith).
        self._under = tuple(_prefix(root) for root in self.roots)
        self._real_under = tuple(_prefix(root) for root in self._real_roots)

    def check(self, uri: str) -> str:
        """Normalize ``uri`` and return it if it, and what it resolves to, lie under a root.

        Raises UfsInvalidPath for a malformed or traversing URI or a symlink loop,
        UfsOutsideRoots otherwise; the URI returned is the name, not its resolution.
        """
        return self.inside(uris.normalize(uri))

    def inside(self, canonical: str) -> str:
        """:meth:`check` of a URI already in canonical form (``ufs.uri.normalize``)."""
        if not self._named_inside(canonical):
            allowed = ", ".join(self.roots) or "none configured (set dora.worker.ufs.roots)"
            raise UfsOutsideRoots(f"path {canonical!r} is outside the mount roots ({allowed})")
        if canonical.startswith(_FILE) and not self._resolves_inside(canonical):
            # The target is not named: it may be something the caller should not learn.
            raise UfsOutsideRoots(
                f"path {canonical!r} leads through a symbolic link outside the mount roots"
            )
        return canonical

    def _named_inside(self, canonical: str) -> bool:
        return canonical in self.roots or canonical.startswith(self._under)

    def _real_inside(self, real: str) -> bool:
        return real in self._real_roots or real.startswith(self._real_under)

    def _resolves_inside(self, canonical: str) -> bool:
        try:
            real = resolve(canonical[len(_FILE) :])
        except OSError as exc:
            raise translate(exc, "resolve", canonical) from exc
        return self._real_inside(real)

    def visible(self, entries: Iterable[UfsStatus], *, scan: bool = True) -> list[UfsStatus]:
        """The listing entries that may be served; the others are left out.

        Left out rather than failing the listing: a single link planted in a shared directory
        must not deny everyone its listing (and a load job of it), and an entry left out
        leaks nothing — a link's status is its target's, so even its size would tell.
        Exactly the entries :meth:`check` passes, most of them settled cheaply (see the
        module docstring): meant for the listing of a directory, as each directory holding
        local entries is scanned once, however few of its entries are given. With ``scan``
        False, each local entry's name is looked up alone instead (one ``lstat`` through a
        descriptor of its directory): for a few files of what may be large directories (a
        load job's batch), where a scan per batch would cost the whole directory each time.
        """
        entries = list(entries)
        names: dict[str, set[str]] | None = None
        if not scan:
            names = {}
            for entry in entries:
                directory, _, name = entry.uri.rpartition("/")
                names.setdefault(directory, set()).add(name)
        directories: dict[str, frozenset[str] | bool] = {}
        return [
            entry
            for entry in entries
            if self._settled(entry.uri, directories, names) or self._allows(entry.uri)
        ]

    def _settled(
        self,
        uri: str,
        directories: dict[str, frozenset[str] | bool],
        names: dict[str, set[str]] | None,
    ) -> bool:
        """True if ``uri`` is sure to pass :meth:`check`: its directory is canonical and
        named inside the roots, its name a canonical segment, and, for a local directory,
        the directory resolved inside the roots (looked at once per call, in
        ``directories``: scanned, or only for the ``names`` given in it) and the name no
        symlink in that very directory, so it resolves to a name inside the directory's
        resolution. False settles nothing."""
        directory, _, name = uri.rpartition("/")
        plain = directories.get(directory)
        if plain is None:
            wanted = None if names is None else names[directory]
            plain = directories[directory] = self._plain_inside(directory, wanted)
        if plain is not True and (plain is False or name not in plain):
            return False
        try:
            uris.child(directory, name)
        except UfsInvalidPath:
            return False
        return True

    def _plain_inside(self, directory: str, names: set[str] | None) -> frozenset[str] | bool:
        """Which names in ``directory`` are sure to stay inside the roots: for a local
        directory, those that are no symlinks (among ``names`` if given), if it is canonical
        and both named and resolved inside the roots; for any other (names are all there is),
        True, every name, if it is canonical and named inside; False, none, otherwise or where
        that cannot be told this way."""
        if not self._named_inside(directory):
            return False
        try:
            if uris.normalize(directory) != directory:
                return False
        except UfsInvalidPath:
            return False
        if not directory.startswith(_FILE):
            return True
        try:
            scanned = plain_entries(directory[len(_FILE) :], names)
        except (UfsInvalidPath, OSError):
            return False
        if scanned is None or not self._real_inside(scanned[0]):
            return False
        return scanned[1]

    def _allows(self, uri: str) -> bool:
        try:
            self.check(uri)
        except UfsError:
            return False
        return True


def _canonical(root: str) -> str:
    """A root's canonical form: ``scheme://`` for a whole S3 store, else the URI's."""
    scheme, sep, rest = root.strip().partition("://")
    if sep and not rest.strip("/") and scheme.lower() in uris.S3_SCHEMES:
        return f"{scheme.lower()}://"
    return uris.normalize(root)


def is_store(root: str) -> bool:
    """Whether canonical root ``root`` is a whole store (``s3://``)."""
    return root.endswith("://")


def _prefix(root: str) -> str:
    """What a path strictly under ``root`` starts with."""
    return root if root.endswith("/") else root + "/"
