"""The container image (Dockerfile at the repository root), built and run without a registry.

The Dockerfile is built for real by buildah on a Debian + Python base that mmdebstrap makes from
Debian's packages (tests/integration/image/image_support.py; cached between runs), and the chart's
worker command runs from the image, as the chart's pod would run it, in front of SeaweedFS: a
file is read through it from the host, and it must have written nothing outside its volumes
(the chart's root filesystem is read-only). The built image is checked for its user, for the
absence of compilers and build tools, and for its size. The Dockerfile is also checked against
the Helm chart as rendered by tests/helm: the image repository and tag, the container command
and args, the port, the probe paths and the user. Where the image cannot be built here, the
tests that need it skip with the reason.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shlex
import signal
import subprocess
import time
import tomllib
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import helm_python as helm
import httpx
import pytest
import s3fs
import yaml

from tests.helm.test_chart import (
    CHART,
    Manifest,
    pod_spec,
    render,
    site_properties,
    worker_container,
)
from tests.integration.conftest import BUCKET
from tests.integration.image.image_support import (
    CACHE,
    IMAGE_NAME,
    ROOT,
    Buildah,
    ImageUnavailable,
    base_image,
    build_image,
    build_lock,
    check_tools,
    remove_other_builds,
)
from worker.devlab.local.s3 import ACCESS_KEY, SECRET_KEY, LocalS3, free_port
from worker.keys import BIND_PORT

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
    return [c for c in shell_commands(instructions) if c[1:4] == ["-m", "pip", "install"]]


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
    # The base is a build argument (the test build uses its own), declared before FROM.
    arg, base = dockerfile[0], dockerfile[1]
    assert (arg.keyword, arg.rest) == ("ARG", "BASE_IMAGE=python:3.11-slim")
    assert (base.keyword, base.rest) == ("FROM", "${BASE_IMAGE}")
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


# --- the image, built and run ---------------------------------------------------------------

TOKEN = "image-test-token"
# Anything that compiles or builds packages: none of it belongs in an image that only runs.
BUILD_TOOLS = (
    "gcc",
    "cc",
    "c++",
    "g++",
    "clang",
    "cpp",
    "ld",
    "as",
    "make",
    "cmake",
    "pip",
    "pip3",
)
BUILD_MODULES = ("pip", "setuptools", "wheel", "pytest", "mypy", "pyspark", "moto")
# Measured 282 MB (the Debian base 179 MB, the venv 103 MB); the budget catches a dev extra or a
# compiler slipping in, each of which costs far more than the headroom.
SIZE_BUDGET = 350 * 1000**2
# The run's own tag: pytest-xdist workers of one run share the image, built once under the lock.
RUN_TAG = f"{IMAGE_NAME}:run-{os.environ.get('PYTEST_XDIST_TESTRUNUID') or uuid.uuid4().hex}"


@pytest.fixture(scope="module")
def buildah() -> Buildah:
    return Buildah(CACHE / "storage")


@pytest.fixture(scope="module")
def image(buildah: Buildah, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The Dockerfile built on the Debian base, once per test run."""
    try:
        check_tools()
        with build_lock():
            base = base_image(buildah)
            if not buildah.has_image(RUN_TAG):
                remove_other_builds(buildah, keep=RUN_TAG)
                build_image(buildah, base, RUN_TAG, tmp_path_factory.mktemp("build"))
    except ImageUnavailable as exc:
        pytest.skip(f"the image cannot be built here: {exc}")
    return RUN_TAG


@pytest.fixture
def container(buildah: Buildah, image: str) -> Iterator[str]:
    with buildah.container(image) as name:
        yield name


@dataclass(frozen=True)
class Ran:
    """What a command run in the container did."""

    returncode: int
    stdout: str
    stderr: str


def run_in(buildah: Buildah, container: str, scratch: Path, *command: str) -> Ran:
    """``command`` run in ``container``. Its output goes to a file in a bind-mounted directory:
    buildah (chroot isolation) at times drops the output of a command that exits at once."""
    scratch.mkdir(exist_ok=True)
    scratch.chmod(0o777)  # the image's user writes it
    out = scratch / "stdout"
    out.unlink(missing_ok=True)
    redirected = ("sh", "-c", '"$@" > /ran/stdout', "sh", *command)
    done = subprocess.run(
        buildah.run_in(container, *redirected, options=(f"--volume={scratch}:/ran",)),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return Ran(done.returncode, out.read_text() if out.exists() else "", done.stderr)


def test_the_image_runs_as_the_charts_user_with_the_dockerfiles_entrypoint(
    buildah: Buildah, image: str, container: str, dockerfile: list[Instruction], tmp_path: Path
) -> None:
    config = json.loads(buildah.run("inspect", "--type", "image", image))["Docker"]["config"]
    security = chart_values()["worker"]["securityContext"]
    assert config["User"] == f"{security['runAsUser']}:{security['runAsGroup']}"
    assert config["Entrypoint"] == only(dockerfile, "ENTRYPOINT").exec_form()
    healthcheck = json.loads(only(dockerfile, "HEALTHCHECK").rest.removeprefix("CMD "))
    assert config["Healthcheck"]["Test"] == ["CMD", *healthcheck]
    done = run_in(buildah, container, tmp_path, "sh", "-c", "id -u && id -g")
    assert done.stdout.split() == ["10001", "10001"], done


def test_no_compiler_or_build_tool_is_inside(
    buildah: Buildah, container: str, tmp_path: Path
) -> None:
    probe = (
        "import importlib.util, shutil, worker; print(worker.__file__); "
        f"print([t for t in {BUILD_TOOLS!r} if shutil.which(t)]); "
        f"print([m for m in {BUILD_MODULES!r} if importlib.util.find_spec(m)])"
    )
    done = run_in(buildah, container, tmp_path, "python3", "-c", probe)
    assert done.returncode == 0, done
    located, tools, modules = done.stdout.splitlines()
    assert located.startswith("/opt/doracache/venv/lib/")  # the installed package, no source tree
    assert (tools, modules) == ("[]", "[]")


def test_the_image_size_stays_within_its_budget(buildah: Buildah, image: str) -> None:
    assert buildah.size_bytes(image) < SIZE_BUDGET


@dataclass
class ImageWorker:
    """The chart's worker container run from the image: its port on the host's loopback, the
    host directories standing for its volumes, its log."""

    port: int
    volumes: dict[str, Path]
    log: Path


def pod_environment(container: Manifest, manifests: list[Manifest]) -> dict[str, str]:
    """The container's environment as the kubelet would set it, secrets read from the rendered
    Secret."""
    secrets = {m["metadata"]["name"]: m["data"] for m in manifests if m["kind"] == "Secret"}
    environ: dict[str, str] = {}
    for entry in container["env"]:
        if "value" in entry:
            environ[entry["name"]] = entry["value"]
        else:
            ref = entry["valueFrom"]["secretKeyRef"]
            environ[entry["name"]] = base64.b64decode(secrets[ref["name"]][ref["key"]]).decode()
    return environ


def volume_options(container: Manifest, manifests: list[Manifest], base: Path) -> dict[str, Path]:
    """A host directory per volume mount of the container: the ConfigMap's files for the config
    mount, else an empty directory handed to the worker's user (as the chart's init container
    does for hostPath volumes). Maps mount paths to directories."""
    directories: dict[str, Path] = {}
    for mount in container["volumeMounts"]:
        directory = base / mount["name"]
        directory.mkdir()
        if mount["mountPath"] == str(Path(CONF_FILE).parent):
            (directory / "dora-site.properties").write_text(site_properties(manifests))
        else:
            os.chown(directory, 10001, 10001)
        directories[mount["mountPath"]] = directory
    return directories


@pytest.fixture
def image_worker(
    buildah: Buildah,
    container: str,
    chart: helm.Chart,
    seaweedfs: LocalS3,
    tmp_path: Path,
) -> Iterator[ImageWorker]:
    """The chart's worker command, environment and volumes (rendered for SeaweedFS, with a token
    and S3 keys from the chart's Secret) run from the image. The host network is the only one
    here, so the environment (ranked above the site file) keeps it on loopback, on a free port."""
    values = {
        "properties": {
            "dora.worker.ufs.roots": f"s3://{BUCKET}",
            "dora.ufs.s3.endpoint": seaweedfs.endpoint,
        },
        "auth": {"token": TOKEN},
        "s3": {"accessKeyId": ACCESS_KEY, "secretAccessKey": SECRET_KEY},
    }
    manifests = render(chart, values)
    spec = worker_container(pod_spec(manifests))
    port = free_port()
    environ = pod_environment(spec, manifests)
    environ.update(DORA_WORKER_HTTP_BIND_HOST="127.0.0.1", DORA_WORKER_HTTP_PORT=str(port))
    volumes = volume_options(spec, manifests, tmp_path)
    options = [f"--env={name}={value}" for name, value in environ.items()]
    options += [f"--volume={host}:{inside}" for inside, host in volumes.items()]
    command = buildah.run_in(container, *spec["command"], options=tuple(options))
    log = tmp_path / "worker.log"
    with log.open("wb") as output:
        process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT)
    try:
        wait_healthy(process, port, log)
        yield ImageWorker(port, volumes, log)
    finally:
        # buildah takes the worker down with it.
        process.send_signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=60)
        process.kill()  # only if SIGTERM did not stop it: a reaped process is not signalled
        process.wait()


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
        time.sleep(0.2)


def test_the_charts_worker_runs_from_the_image_and_serves_s3(
    buildah: Buildah,
    container: str,
    dockerfile: list[Instruction],
    image_worker: ImageWorker,
    s3_raw: s3fs.S3FileSystem,
    s3_root: str,
) -> None:
    started = image_worker.log.read_text()
    assert f"configuration: site file {CONF_FILE} (" in started
    uri = f"{s3_root}/through-the-image.bin"
    payload = os.urandom(3 * 1024 * 1024 + 17)
    s3_raw.pipe_file(uri.removeprefix("s3://"), payload)
    base = f"http://127.0.0.1:{image_worker.port}"
    auth = {"Authorization": f"Bearer {TOKEN}"}
    for _ in range(2):  # a miss filled from SeaweedFS, then a hit from the page volume
        read = httpx.get(f"{base}/v1/read", params={"path": uri}, headers=auth, timeout=60)
        assert read.status_code == 200, read.text
        assert read.content == payload
    status = httpx.get(f"{base}/v1/status", params={"path": uri}, headers=auth, timeout=30)
    assert status.json()["cached_bytes"] == len(payload)
    pages = image_worker.volumes[worker_mount_path("pages")]
    written = [path for path in pages.rglob("*") if path.is_file()]
    assert written
    assert {path.stat().st_uid for path in written} == {10001}  # the image's user, not root
    assert httpx.get(f"{base}/v1/status", params={"path": uri}, timeout=30).status_code == 401
    assert httpx.get(f"{base}/readyz", timeout=10).status_code == 200
    healthcheck = json.loads(only(dockerfile, "HEALTHCHECK").rest.removeprefix("CMD "))
    port_env = f"DORA_WORKER_HTTP_PORT={image_worker.port}"
    scratch = image_worker.log.parent / "healthcheck"
    assert run_in(buildah, container, scratch, "env", port_env, *healthcheck).returncode == 0
    closed = f"DORA_WORKER_HTTP_PORT={free_port()}"
    assert run_in(buildah, container, scratch, "env", closed, *healthcheck).returncode != 0
    # The chart runs the worker on a read-only root filesystem: it may write only to its volumes.
    assert buildah.written(container) == []


def worker_mount_path(volume: str) -> str:
    mount_path: str = chart_values()["storage"][volume]["mountPath"]
    return mount_path
