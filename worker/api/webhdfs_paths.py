"""WebHDFS paths and UFS URIs: ``/<scheme>/<rest>`` ↔ ``<scheme>://<rest>``.

``/s3/bucket/key`` is ``s3://bucket/key`` and ``/file/data/x`` is ``file:///data/x``. The paths
above the mount roots (``/``, ``/s3``, ``/s3/bucket`` for a root ``s3://bucket/prefix``) are
*virtual directories*: they exist so that a Hadoop client can walk down to a root, list only the
way towards the roots, and are never mapped to a URI (listing ``/file`` must not list a host's
``/``). Every other path maps to a URI, which the service then checks against the mount roots.
"""

from __future__ import annotations

from ufs import uri as uris
from ufs.roots import MountRoots

PREFIX = "/webhdfs/v1"
# Where the Hadoop client's OAuth2 token provider asks for its access token.
TOKEN_PATH = "/webhdfs/oauth2/token"


def path_of(uri: str) -> str:
    """The WebHDFS path of a canonical URI."""
    scheme, rest = uris.split(uri)
    if scheme == "file":
        return "/file" + rest.rstrip("/")
    return f"/{scheme}/{rest}"


def uri_of(path: str) -> str:
    """The URI a WebHDFS path names, as text: the service normalizes it (refusing traversal or
    a scheme with no bucket) and checks it against the mount roots."""
    scheme, _, rest = path.strip("/").partition("/")
    if scheme.lower() == "file":
        return "file:///" + rest
    return f"{scheme}://{rest}"


def _segments(path: str) -> tuple[str, ...]:
    return tuple(part for part in path.split("/") if part)


class Namespace:
    """The WebHDFS view of the mount roots. Immutable, so thread-safe."""

    def __init__(self, roots: MountRoots) -> None:
        self.root_paths = tuple(_segments(path_of(root)) for root in roots.roots)

    def is_virtual(self, path: str) -> bool:
        """Whether ``path`` lies strictly above some mount root."""
        return bool(self.children(path))

    def children(self, path: str) -> list[str]:
        """The names under virtual directory ``path`` that lead towards a mount root, sorted."""
        parts = _segments(path)
        names = {
            root[len(parts)]
            for root in self.root_paths
            if len(root) > len(parts) and root[: len(parts)] == parts
        }
        return sorted(names)

    def home(self) -> str:
        """The home directory the client's relative paths resolve against: the first mount
        root, or ``/`` when none is configured."""
        return "/" + "/".join(self.root_paths[0]) if self.root_paths else "/"
