"""alluxiofs versions to test against, each in an interpreter of its own, and a way to run
``alluxiofs_driver.py`` under it.

1.0.22 is pinned in the project's dev extras and runs in this interpreter. The others pin
dependencies this environment cannot share (1.0.17 needs protobuf < 3.21 for its gRPC etcd
client; 1.1.17 needs pycurl), so each gets a virtualenv under ``.venv-alluxiofs/<version>``,
built on first use from PyPI (``make alluxiofs-venvs`` builds them ahead) into a temporary
directory renamed into place, so a build cut short is never mistaken for a finished one.
Each such virtualenv sees this interpreter's packages after its own (a ``.pth`` line), so pip
installs only what the version pins differently: seconds instead of minutes of downloads.
"""

from __future__ import annotations

import importlib.metadata
import json
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
VENVS = ROOT / ".venv-alluxiofs"
DRIVER = Path(__file__).with_name("alluxiofs_driver.py")
PINNED = "1.0.22"
OWN_VENV = ("1.0.17", "1.1.17")
INSTALL_TIMEOUT_S = 600
DRIVE_TIMEOUT_S = 240


def python_for(version: str) -> str:
    """The interpreter that has alluxiofs ``version``."""
    if version == PINNED:
        assert importlib.metadata.version("alluxiofs") == PINNED, "reinstall the dev extras"
        return sys.executable
    venv = VENVS / version
    if not (venv / "bin" / "python").exists():
        _build(venv, version)
    return str(venv / "bin" / "python")


def _build(venv: Path, version: str) -> None:
    VENVS.mkdir(exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix=f"{version}.", dir=VENVS))
    try:
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(building)], check=True)
        _share_packages(building)
        s3fs = importlib.metadata.version("s3fs")
        subprocess.run(
            [sys.executable, "-m", "pip", "--python", str(building / "bin" / "python"),
             "install", "--quiet", f"alluxiofs=={version}", f"s3fs=={s3fs}"],
            check=True, timeout=INSTALL_TIMEOUT_S,
        )  # fmt: skip
        try:
            building.rename(venv)
        except OSError:
            if not venv.exists():
                raise  # else another run built it first: keep theirs
    finally:
        shutil.rmtree(building, ignore_errors=True)


def _share_packages(venv: Path) -> None:
    """Put this interpreter's site-packages after ``venv``'s own on its path."""
    ours = sysconfig.get_path("purelib")
    ask = "import sysconfig; print(sysconfig.get_path('purelib'))"
    theirs = subprocess.run(
        [str(venv / "bin" / "python"), "-c", ask], check=True, capture_output=True, text=True
    ).stdout.strip()
    Path(theirs, "zz-shared-dora-venv.pth").write_text(ours + "\n")


def drive(version: str, client: dict[str, Any], ops: list[list[Any]]) -> dict[str, Any]:
    """Run ``ops`` through alluxiofs ``version`` configured with ``client``."""
    request = json.dumps({"client": client, "ops": ops})
    done = subprocess.run(
        [python_for(version), str(DRIVER)],
        input=request.encode(),
        capture_output=True,
        timeout=DRIVE_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()[-4000:]
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


if __name__ == "__main__":
    for name in OWN_VENV:
        print(name, python_for(name))
