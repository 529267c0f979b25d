"""A Java truststore for Spark's ``swebhdfs://`` reads, made from a PEM CA bundle with the
JDK's ``keytool``: the JDK's own trusted CAs plus the bundle's certificates, so a user passes
only the CA file (:func:`worker.spark.webhdfs.spark_conf`) and every other HTTPS endpoint the
JVM talks to (S3, a metastore) stays trusted.

The store is PKCS12, in the user's cache directory, named by a hash of the bundle (a changed
bundle makes a new store). Its password only guards integrity: a truststore holds public
certificates, and the JVM needs the password to read it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from pagestore import modes
from worker.spark.hadoopjar import cache_dir

PASSWORD = "doracache"
_BEGIN = b"-----BEGIN CERTIFICATE-----"
_KEYTOOL_TIMEOUT_S = 120


def keytool() -> str:
    """The JDK's ``keytool``: ``$JAVA_HOME/bin/keytool``, else the one on the PATH. Raises
    RuntimeError without one."""
    home = os.environ.get("JAVA_HOME")
    if home and os.access(Path(home, "bin", "keytool"), os.X_OK):
        return str(Path(home, "bin", "keytool"))
    found = shutil.which("keytool")
    if found is None:
        raise RuntimeError("no keytool: install a JDK (make jdk) or set JAVA_HOME")
    return found


def _jdk_cacerts(tool: str) -> Path | None:
    """The JDK's trusted CAs next to ``tool`` (``<java home>/lib/security/cacerts``)."""
    found = Path(tool).resolve().parent.parent / "lib" / "security" / "cacerts"
    return found if found.is_file() else None


def _certificates(bundle: bytes) -> list[bytes]:
    """Each PEM certificate of a bundle (keytool imports only the first of a file)."""
    parts = [_BEGIN + rest for rest in bundle.split(_BEGIN)[1:]]
    if not parts:
        raise ValueError("no PEM certificate in it")
    return parts


def truststore(ca_file: str | os.PathLike[str]) -> Path:
    """The truststore for ``ca_file`` (made now if missing). Raises ValueError for a file that
    holds no PEM certificate, RuntimeError when keytool fails."""
    bundle = Path(ca_file).read_bytes()
    try:
        certificates = _certificates(bundle)
    except ValueError as exc:
        raise ValueError(f"{ca_file}: {exc}") from None
    target = cache_dir() / "truststores" / f"{hashlib.sha256(bundle).hexdigest()[:24]}.p12"
    if target.exists():
        return target
    modes.make_dirs(target.parent, modes.PUBLIC_DIR)
    tool = keytool()
    with tempfile.TemporaryDirectory(dir=target.parent) as scratch:
        store = Path(scratch, "store.p12")
        common = ["-keystore", str(store), "-storetype", "PKCS12", "-storepass", PASSWORD]
        cacerts = _jdk_cacerts(tool)
        if cacerts is not None:
            _run(tool, "-importkeystore", "-srckeystore", str(cacerts), "-srcstorepass",
                 "changeit", "-destkeystore", str(store), "-deststoretype", "PKCS12",
                 "-deststorepass", PASSWORD)  # fmt: skip
        for index, certificate in enumerate(certificates):
            pem = Path(scratch, f"ca-{index}.pem")
            modes.write_file(pem, certificate, modes.PRIVATE_FILE)
            _run(tool, "-importcert", "-alias", f"doracache-ca-{index}", "-file", str(pem),
                 *common)  # fmt: skip
        # Renamed into place whole: a concurrent maker renames an equal store over it.
        os.chmod(store, modes.PUBLIC_FILE)  # keytool's mode is the umask's
        store.replace(target)
    return target


def _run(tool: str, *args: str) -> None:
    done = subprocess.run(
        [tool, *args, "-noprompt"], capture_output=True, timeout=_KEYTOOL_TIMEOUT_S, check=False
    )
    if done.returncode != 0:
        output = (done.stdout + done.stderr).decode(errors="replace").strip()
        raise RuntimeError(f"keytool {args[0]} failed: {output[-500:]}")


def java_options(ca_file: str | os.PathLike[str], store_path: str | None = None) -> str:
    """JVM options that make ``ca_file``'s truststore (at ``store_path``, default where
    :func:`truststore` made it) the JVM's default one."""
    path = store_path or str(truststore(ca_file))
    return (
        f"-Djavax.net.ssl.trustStore={path} -Djavax.net.ssl.trustStoreType=PKCS12 "
        f"-Djavax.net.ssl.trustStorePassword={PASSWORD}"
    )
