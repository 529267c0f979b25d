"""The container image (Dockerfile at the repository root), checked without a Docker engine.

Its COPY instructions are replayed into a directory standing for the image's filesystem, its
pip command lines run for real into a fresh ``python -m venv`` (with pip's cache and the
machine's own pip configuration), and the chart's worker command runs from that venv and answers
its probes and the image's HEALTHCHECK. The rest is checked against the Helm chart as rendered
by tests/helm: the image repository and tag, the container command and args, the port, the
probe paths and the user.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import helm_python as helm
import httpx
import pytest
import yaml

from tests.helm.test_chart import (
    CHART,
    Manifest,
    pod_spec,
    render,
    site_properties,
    worker_container,
)
from worker.keys import BIND_PORT
from worker.locals3 import free_port

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"
CONF_FILE = "/etc/doracache/dora-site.properties"

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(900)]


@dataclass(frozen=True)
class Instruction:
    """One Dockerfile instruction: its keyword, its --flags and the rest of its line."""

    keyword: str
    flags: tuple[str, ...]
    rest: str

    def exec_form(self) -> list[str]:
        form: list[str] = json.loads(self.rest)
        return form


def parse_dockerfile(text: str) -> list[Instruction]:
    """Instructions with continuation lines joined; comments and parser directives left out."""
    instructions: list[Instruction] = []
    pending = ""
    for line in text.splitlines():
        stripped = line.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if stripped.startswith("#"):
            continue  # a comment inside a continued instruction
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        words = (pending + stripped).split(None, 1)
        pending = ""
        keyword, rest = words[0].upper(), words[1] if len(words) > 1 else ""
        flags: list[str] = []
        while rest.startswith("--"):
            flag, _, rest = rest.partition(" ")
            flags.append(flag)
            rest = rest.lstrip()
        instructions.append(Instruction(keyword, tuple(flags), rest))
    assert not pending, "the Dockerfile ends inside a continued instruction"
    return instructions


def only(instructions: list[Instruction], keyword: str) -> Instruction:
    found = [i for i in instructions if i.keyword == keyword]
    assert len(found) == 1, f"expected one {keyword}, found {len(found)}"
    return found[0]


def shell_commands(instructions: list[Instruction]) -> list[list[str]]:
    """Every command of every shell-form RUN, split at ``&&``."""
    commands: list[list[str]] = []
    for run in (i for i in instructions if i.keyword == "RUN"):
        words = shlex.split(run.rest)
        command: list[str] = []
        for word in [*words, "&&"]:
            if word == "&&":
                commands.append(command)
                command = []
            else:
                command.append(word)
    return commands


def pip_installs(instructions: list[Instruction]) -> list[list[str]]:
    return [c for c in shell_commands(instructions) if c[:4] == ["python", "-m", "pip", "install"]]


def option(command: list[str], name: str) -> str:
    return command[command.index(name) + 1]


@pytest.fixture(scope="module")
def dockerfile() -> list[Instruction]:
    return parse_dockerfile(DOCKERFILE.read_text())


@pytest.fixture(scope="module")
def chart() -> Iterator[helm.Chart]:
    with helm.Chart.load(CHART) as loaded:
        yield loaded


@pytest.fixture(scope="module", params=["daemonset", "sidecar"])
def rendered(request: pytest.FixtureRequest, chart: helm.Chart) -> list[Manifest]:
    return render(chart, {"mode": request.param})


def chart_values() -> dict[str, Any]:
    values: dict[str, Any] = yaml.safe_load((CHART / "values.yaml").read_text())
    return values


# --- what the Dockerfile says, against the chart --------------------------------------------


def test_base_is_slim_python_311_and_the_package_is_installed_with_the_worker_extra(
    dockerfile: list[Instruction],
) -> None:
    assert only(dockerfile, "FROM").rest.startswith("python:3.11-slim")
    (install,) = pip_installs(dockerfile)
    sources = [word for word in install[4:] if not word.startswith("-")]
    # the worker's packages, no [dev] or [spark] extras, no other package
    assert sources == ["/opt/doracache/src[worker]"]


def test_every_copied_source_is_in_the_build_context(dockerfile: list[Instruction]) -> None:
    lines = (ROOT / ".dockerignore").read_text().splitlines()
    patterns = [line.strip() for line in lines if line.strip() and not line.startswith("#")]
    assert patterns[0] == "*"  # everything is left out but what is let through
    let_through = {p.removeprefix("!") for p in patterns if p.startswith("!")}
    copied = {s for i in dockerfile if i.keyword == "COPY" for s in shlex.split(i.rest)[:-1]}
    assert copied == let_through
    assert all((ROOT / source).exists() for source in copied)


def test_the_user_is_the_charts_fixed_non_root_uid(dockerfile: list[Instruction]) -> None:
    security = chart_values()["worker"]["securityContext"]
    users = [i for i in dockerfile if i.keyword == "USER"]
    uid, _, gid = users[-1].rest.partition(":")
    assert int(uid) != 0
    assert (int(uid), int(gid)) == (security["runAsUser"], security["runAsGroup"])
    (useradd,) = [c for c in shell_commands(dockerfile) if c[0] == "useradd"]
    (groupadd,) = [c for c in shell_commands(dockerfile) if c[0] == "groupadd"]
    assert int(option(useradd, "--uid")) == int(uid)
    assert int(option(groupadd, "--gid")) == int(gid)


def test_the_charts_default_image_is_this_one(chart: helm.Chart) -> None:
    values = chart_values()
    chart_meta = yaml.safe_load((CHART / "Chart.yaml").read_text())
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert values["image"]["repository"] == "ghcr.io/doracache/doracache"
    assert values["image"]["tag"] == ""  # the chart's appVersion: the package built here
    assert chart_meta["appVersion"] == version
    container = worker_container(pod_spec(render(chart)))
    assert container["image"] == f"ghcr.io/doracache/doracache:{version}"


def test_the_charts_command_runs_the_entrypoint_and_args_append_to_it(
    dockerfile: list[Instruction], rendered: list[Manifest], chart: helm.Chart
) -> None:
    entrypoint = only(dockerfile, "ENTRYPOINT").exec_form()
    assert only(dockerfile, "CMD").exec_form() == []
    container = worker_container(pod_spec(rendered))
    assert container["command"] == [*entrypoint, "--conf", CONF_FILE]
    extra = ["-Ddora.worker.page.store.evictor=lfu"]
    with_args = worker_container(pod_spec(render(chart, {"worker": {"extraArgs": extra}})))
    assert with_args["command"][: len(entrypoint)] == entrypoint
    assert with_args["args"] == extra


def test_the_exposed_port_is_the_charts_and_the_workers_default(
    dockerfile: list[Instruction], rendered: list[Manifest]
) -> None:
    exposed = [int(word.split("/")[0]) for word in only(dockerfile, "EXPOSE").rest.split()]
    ports = worker_container(pod_spec(rendered))["ports"]
    assert exposed == [port["containerPort"] for port in ports]
    assert exposed == [chart_values()["worker"]["port"]]
    assert exposed == [int(BIND_PORT.default or "")]  # the image sets no other port
    assert f"dora.worker.http.port={exposed[0]}" in site_properties(rendered).splitlines()


def test_the_healthcheck_and_the_charts_probes_ask_the_same_paths(
    dockerfile: list[Instruction], rendered: list[Manifest]
) -> None:
    healthcheck = only(dockerfile, "HEALTHCHECK").rest
    assert healthcheck.startswith("CMD ")
    command = json.loads(healthcheck.removeprefix("CMD "))
    assert command[0] == "python3"  # what the chart's exec probes run too
    assert "/healthz" in command[-1]
    container = worker_container(pod_spec(rendered))
    paths = {}
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        handler = container[probe]
        if "exec" in handler:
            assert handler["exec"]["command"][0] == command[0]
            paths[probe] = handler["exec"]["command"][-1]
        else:
            assert handler["httpGet"]["port"] == container["ports"][0]["name"]
            paths[probe] = handler["httpGet"]["path"]
    assert paths == {
        "startupProbe": "/healthz",
        "livenessProbe": "/healthz",
        "readinessProbe": "/readyz",
    }


# --- the install steps, run for real ----------------------------------------------------------


def replay_copies(dockerfile: list[Instruction], rootfs: Path) -> None:
    """Each COPY from the build context (the repository) into ``rootfs``, as Docker does: a
    directory's contents into the destination, a file into a destination ending in /."""
    for copy in (i for i in dockerfile if i.keyword == "COPY"):
        *sources, dest = shlex.split(copy.rest)
        target = rootfs / dest.lstrip("/")
        for source in sources:
            path = ROOT / source
            if path.is_dir():
                shutil.copytree(path, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
            else:
                target.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, target / path.name)


def in_rootfs(word: str, rootfs: Path) -> str:
    return str(rootfs / word.lstrip("/")) if word.startswith("/") else word


@pytest.fixture(scope="module")
def image_venv(dockerfile: list[Instruction], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv holding what the Dockerfile's pip steps install."""
    base = tmp_path_factory.mktemp("image")
    rootfs = base / "rootfs"
    replay_copies(dockerfile, rootfs)
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    environ = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    for install in pip_installs(dockerfile):
        command = [str(venv / "bin" / "python"), *(in_rootfs(w, rootfs) for w in install[1:])]
        done = subprocess.run(
            command, cwd=base, env=environ, capture_output=True, text=True, check=False
        )
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return venv


def venv_python(venv: Path, code: str) -> str:
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-c", code],
        cwd=venv.parent,
        env={"PATH": os.environ["PATH"]},
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def test_the_venv_holds_the_package_and_no_dev_tools(image_venv: Path) -> None:
    located = venv_python(image_venv, "import worker; print(worker.__file__)")
    assert Path(located).is_relative_to(image_venv)  # the installed copy, not the worktree
    missing = venv_python(
        image_venv,
        "import importlib.util as u; print([m for m in ('pytest', 'mypy', 'pyspark', 'moto') "
        "if u.find_spec(m)])",
    )
    assert missing == "[]"


@pytest.fixture
def chart_worker(
    image_venv: Path, chart: helm.Chart, tmp_path: Path
) -> Iterator[tuple[int, dict[str, str]]]:
    """The chart's worker command from the image venv, with the chart's rendered site file; the
    environment (which the configuration ranks above the file) moves it to a free loopback port
    and to directories under tmp_path. Yields the port and that environment."""
    container = worker_container(pod_spec(render(chart)))
    site = tmp_path / "dora-site.properties"
    site.write_text(site_properties(render(chart)))
    command = [c.replace(CONF_FILE, str(site)) for c in container["command"]]
    command[0] = str(image_venv / "bin" / command[0])
    port = free_port()
    environ = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "DORA_WORKER_HTTP_BIND_HOST": "127.0.0.1",
        "DORA_WORKER_HTTP_PORT": str(port),
        "DORA_WORK_DIR": str(tmp_path / "work"),
        "DORA_WORKER_PAGE_STORE_DIRS": str(tmp_path / "pages"),
        "DORA_WORKER_PAGE_STORE_SIZES": "64MB",
        "DORA_WORKER_METASTORE_ROCKSDB_DIR": str(tmp_path / "metastore"),
    }
    log = (tmp_path / "worker.log").open("wb")
    process = subprocess.Popen(
        command, cwd=tmp_path, env=environ, stdout=log, stderr=subprocess.STDOUT
    )
    try:
        wait_healthy(process, port, tmp_path / "worker.log")
        yield port, environ
    finally:
        process.send_signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=60)
        process.kill()  # only if SIGTERM did not stop it: a reaped process is not signalled
        process.wait()
        log.close()


def wait_healthy(process: subprocess.Popen[bytes], port: int, log: Path) -> None:
    deadline = time.monotonic() + 120
    while True:
        assert process.poll() is None, log.read_text()
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=3).status_code == 200:
                return
        except httpx.TransportError:
            pass
        assert time.monotonic() < deadline, "the worker did not answer /healthz\n" + log.read_text()
        time.sleep(0.1)


def healthcheck(dockerfile: list[Instruction], venv: Path, environ: dict[str, str]) -> int:
    command = json.loads(only(dockerfile, "HEALTHCHECK").rest.removeprefix("CMD "))
    command[0] = str(venv / "bin" / command[0])
    done = subprocess.run(command, env=environ, capture_output=True, timeout=60, check=False)
    return done.returncode


def test_the_installed_worker_answers_the_probes_and_the_healthcheck(
    dockerfile: list[Instruction],
    image_venv: Path,
    chart_worker: tuple[int, dict[str, str]],
    tmp_path: Path,
) -> None:
    port, environ = chart_worker
    # The chart's site file was read, then the environment moved the worker here.
    started = (tmp_path / "worker.log").read_text()
    assert f"configuration: site file {tmp_path / 'dora-site.properties'} (" in started
    assert "DORA_WORKER_HTTP_PORT" in started
    for path in ("/healthz", "/readyz"):
        assert httpx.get(f"http://127.0.0.1:{port}{path}", timeout=10).status_code == 200
    assert healthcheck(dockerfile, image_venv, environ) == 0
    closed = {**environ, "DORA_WORKER_HTTP_PORT": str(free_port())}
    assert healthcheck(dockerfile, image_venv, closed) != 0
