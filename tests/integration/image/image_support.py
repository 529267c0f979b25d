"""The worker image built for real without a registry: a Debian + Python base made by
``mmdebstrap`` from Debian's packages, the repository's Dockerfile built on it by
``buildah bud --isolation chroot``, and commands run from the image by
``buildah run --isolation chroot`` (podman cannot start containers in this sandbox).

The base's root filesystem tarball and buildah's storage live under one cache directory outside
the repository (``$DORACACHE_IMAGE_CACHE``, default ``~/.cache/doracache-image``), so only the
first run pays for the base. Builds are serialised by a lock file there: pytest-xdist workers and
other sessions on the machine share the storage.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import ssl
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
CACHE = Path(os.environ.get("DORACACHE_IMAGE_CACHE", Path.home() / ".cache" / "doracache-image"))
SUITE = "bookworm"  # its python3 is 3.11, the oldest the package supports
# python3-venv for the Dockerfile's venv, ca-certificates for pip's HTTPS at build time.
BASE_PACKAGES = ("python3", "python3-venv", "ca-certificates")
# Documentation is dropped at unpack time (copyright files stay): it is a third of the base.
BASE_DPKG_OPTIONS = (
    "path-exclude=/usr/share/doc/*",
    "path-exclude=/usr/share/man/*",
    "path-exclude=/usr/share/locale/*",
    "path-include=/usr/share/doc/*/copyright",
)
IMAGE_NAME = "localhost/doracache"
_SIZE = re.compile(r"^([\d.]+)\s*([kMG]?B)$")
_UNITS = {"B": 1, "kB": 1000, "MB": 1000**2, "GB": 1000**3}


class ImageUnavailable(Exception):
    """The machine cannot build or run the image (a tool missing, Debian's mirror unreachable);
    the message is the one-line reason a test skips with."""


class BuildahError(Exception):
    """A buildah command failed; the message ends with the tail of its output."""

    def __init__(self, command: str, output: str) -> None:
        super().__init__(f"buildah {command} failed:\n{output[-4000:]}")
        self.output = output


@dataclass(frozen=True)
class Buildah:
    """buildah over the cache's own storage (never the machine's default store). Stateless,
    so thread-safe; builds that write the storage take :func:`build_lock` first."""

    storage: Path

    def command(self, *args: str) -> list[str]:
        return [
            "buildah",
            "--root",
            str(self.storage / "root"),
            "--runroot",
            str(self.storage / "run"),
            # Always overlay: written() reads the container's own layer, which vfs does not keep.
            "--storage-driver",
            "overlay",
            *args,
        ]

    def run(self, *args: str, timeout: float = 600) -> str:
        """One buildah command; its standard output. Raises BuildahError when it fails."""
        done = subprocess.run(
            self.command(*args), capture_output=True, text=True, timeout=timeout, check=False
        )
        if done.returncode != 0:
            raise BuildahError(args[0], done.stdout + done.stderr)
        return done.stdout

    def has_image(self, name: str) -> bool:
        return bool(self.run("images", "--quiet", "--noheading", f"--filter=reference={name}"))

    def size_bytes(self, name: str) -> int:
        """The image's uncompressed size, as ``buildah images`` reports it (decimal units)."""
        text = self.run("images", "--noheading", "--format", "{{.Size}}", name).strip()
        match = _SIZE.match(text)
        assert match, f"unexpected size {text!r}"
        return int(float(match[1]) * _UNITS[match[2]])

    @contextlib.contextmanager
    def container(self, image: str) -> Iterator[str]:
        """A working container of ``image``, removed afterwards."""
        name = self.run("from", "--pull=never", image).strip()
        try:
            yield name
        finally:
            self.run("rm", name)

    def written(self, container: str) -> list[str]:
        """Files ``container`` has written to the image's filesystem (its own overlay layer;
        bind-mounted volumes are not in it). buildah has no diff command, so this reads the
        layer from the storage's container table."""
        table = json.loads((self.storage / "root/overlay-containers/containers.json").read_text())
        (layer,) = [c["layer"] for c in table if container in c["names"]]
        upper = self.storage / "root/overlay" / layer / "diff"
        return sorted("/" + str(p.relative_to(upper)) for p in upper.rglob("*") if not p.is_dir())

    def run_in(self, container: str, *command: str, options: tuple[str, ...] = ()) -> list[str]:
        """The ``buildah run`` command line for ``command`` in ``container``: chroot isolation,
        the host's network (the only kind this sandbox allows)."""
        return self.command(
            "run", "--isolation", "chroot", "--network", "host", *options, container, "--", *command
        )


def check_tools() -> None:
    """Raises ImageUnavailable naming the first missing tool."""
    for tool in ("buildah", "mmdebstrap"):
        if shutil.which(tool) is None:
            raise ImageUnavailable(f"{tool} is not installed (`make test` installs it)")
    if os.geteuid() != 0:
        raise ImageUnavailable("mmdebstrap's root mode and buildah's storage here need root")


@contextlib.contextmanager
def build_lock() -> Iterator[None]:
    CACHE.mkdir(parents=True, exist_ok=True)
    with (CACHE / "build.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def base_tag() -> str:
    """The base image's name; its tag follows what mmdebstrap is asked for, so a change there
    builds a new base instead of reusing a stale one."""
    recipe = "\n".join([SUITE, *BASE_PACKAGES, *BASE_DPKG_OPTIONS])
    return f"localhost/doracache-base:{SUITE}-{hashlib.sha256(recipe.encode()).hexdigest()[:12]}"


def base_image(buildah: Buildah) -> str:
    """The Debian + Python base in buildah's storage, made on first use: mmdebstrap writes a
    root filesystem tarball (kept in the cache), a FROM-scratch build imports it. Raises
    ImageUnavailable when mmdebstrap or the import cannot run here. Call under build_lock."""
    tag = base_tag()
    try:
        if buildah.has_image(tag):
            return tag
    except BuildahError as exc:
        raise ImageUnavailable(f"buildah cannot use its storage: {reason(exc.output)}") from exc
    context = CACHE / "base"
    context.mkdir(exist_ok=True)
    tarball = context / f"{tag.rpartition(':')[2]}.tar"
    if not tarball.exists():
        partial = tarball.with_suffix(".partial")
        options = [f"--dpkgopt={o}" for o in BASE_DPKG_OPTIONS]
        command = ["mmdebstrap", "--quiet", "--variant=minbase", "--format=tar", *options]
        command += [f"--include={','.join(BASE_PACKAGES)}", SUITE, str(partial)]
        done = subprocess.run(command, capture_output=True, text=True, timeout=1200, check=False)
        if done.returncode != 0:
            raise ImageUnavailable(f"mmdebstrap failed: {reason(done.stderr)}")
        partial.rename(tarball)
    containerfile = context / "Containerfile"
    containerfile.write_text(f'FROM scratch\nADD {tarball.name} /\nCMD ["python3"]\n')
    try:
        buildah.run(
            "bud", "--isolation", "chroot", "--tag", tag, "--file", str(containerfile), str(context)
        )
    except BuildahError as exc:
        raise ImageUnavailable(f"buildah cannot build here: {reason(exc.output)}") from exc
    return tag


def build_image(buildah: Buildah, base: str, tag: str, scratch: Path) -> None:
    """The repository's Dockerfile built on ``base`` as ``tag`` (Docker format, which keeps
    HEALTHCHECK). pip in the build trusts what this machine trusts (a TLS-inspecting proxy's
    CA, say): the machine's CA bundle and a pip.conf naming it are bind-mounted into the RUN
    steps only, so neither lands in the image."""
    bundle = ssl.get_default_verify_paths().cafile or "/etc/ssl/certs/ca-certificates.crt"
    pip_conf = scratch / "pip.conf"
    pip_conf.write_text("[global]\ncert = /etc/ssl/certs/ca-certificates.crt\n")
    buildah.run(
        "bud",
        "--isolation",
        "chroot",
        "--network",
        "host",
        "--pull=never",
        "--format",
        "docker",
        "--volume",
        f"{bundle}:/etc/ssl/certs/ca-certificates.crt:ro",
        "--volume",
        f"{pip_conf}:/etc/pip.conf:ro",
        "--build-arg",
        f"BASE_IMAGE={base}",
        "--tag",
        tag,
        "--file",
        str(ROOT / "Dockerfile"),
        str(ROOT),
        timeout=1200,
    )


def remove_other_builds(buildah: Buildah, keep: str) -> None:
    """Drops images of earlier test runs (each holds its own venv layer). One still in use by
    a container of a running session stays: buildah refuses, and that is fine."""
    names = buildah.run(
        "images",
        "--noheading",
        "--format",
        "{{.Name}}:{{.Tag}}",
        f"--filter=reference={IMAGE_NAME}:*",
    )
    for name in names.split():
        if name != keep:
            with contextlib.suppress(BuildahError):
                buildah.run("rmi", name)


def reason(text: str) -> str:
    """The line of a tool's output that says why it failed: the first ``Error``/``E:`` line
    (buildah's, apt's and mmdebstrap's; warnings may follow), else the last line."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith(("Error", "E:"))]
    return errors[0] if errors else (lines or ["(no output)"])[-1]
