"""The Spark executor pod template in both modes: how the executor finds its worker, and the page
store mounted read-only into the executor container for short-circuit reads (issue 11): the same
volume as the worker's page directory, at the same path, named in DORACACHE_SHORT_CIRCUIT_ROOT."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import helm_python as helm
import kubernetes_validate
import pytest

from tests.helm.test_chart import (
    FULLNAME,
    KUBE_VERSION,
    NAMESPACE,
    Manifest,
    env_of,
    kinds,
    load_site,
    pod_spec,
    pod_template,
    render,
    site_properties,
    worker_container,
)

ROOT_ENV = "DORACACHE_SHORT_CIRCUIT_ROOT"
MODES = {"daemonset": {}, "sidecar": {"mode": "sidecar"}}


def executor(manifests: list[Manifest]) -> Manifest:
    (container,) = pod_template(manifests)["spec"]["containers"]
    assert container["name"] == "spark-kubernetes-executor"
    result: Manifest = container
    return result


def mount_of(container: Manifest, path: str) -> Manifest | None:
    return next((m for m in container.get("volumeMounts", []) if m["mountPath"] == path), None)


def volume(spec: Manifest, name: str) -> Manifest:
    found: Manifest = next(v for v in spec["volumes"] if v["name"] == name)
    return found


@pytest.mark.parametrize(
    "values",
    [
        {},
        {"storage": {"pages": {"mountPath": "/cache/p", "hostPath": "/mnt/nvme0/dora"}}},
        {"storage": {"pages": {"mountPath": "/cache/p", "type": "ephemeral"}}, "mode": "sidecar"},
        {"mode": "sidecar"},
    ],
    ids=["daemonset", "daemonset-custom-paths", "sidecar-ephemeral", "sidecar"],
)
def test_executor_sees_the_worker_pages_read_only(
    chart: helm.Chart, values: dict[str, Any], tmp_path: Path
) -> None:
    manifests = render(chart, values)
    worker_spec, template_spec = pod_spec(manifests), pod_template(manifests)["spec"]
    pages_dir = (
        load_site(site_properties(manifests), tmp_path).setting("dora.worker.page.store.dirs").value
    )
    (path,) = pages_dir
    worker_mount, executor_mount = (
        mount_of(worker_container(worker_spec), path),
        mount_of(executor(manifests), path),
    )
    assert worker_mount is not None and executor_mount is not None
    assert executor_mount["readOnly"] is True
    assert not worker_mount.get("readOnly", False)
    # The same storage: one pod's own volume (sidecar) or the same node directory (daemonset).
    worker_source = volume(worker_spec, worker_mount["name"])
    executor_source = volume(template_spec, executor_mount["name"])
    if values.get("mode") == "sidecar":
        assert worker_spec == template_spec  # one pod: the worker's volume is the executor's
        assert executor_mount["name"] == worker_mount["name"]
    else:
        assert executor_source["hostPath"]["path"] == worker_source["hostPath"]["path"]
    # Same path in both containers: the page paths the worker hands out open as they are.
    assert env_of(executor(manifests))[ROOT_ENV]["value"] == path


@pytest.mark.parametrize("mode", MODES.values(), ids=MODES.keys())
def test_executor_gets_nothing_else_of_the_worker(chart: helm.Chart, mode: dict[str, str]) -> None:
    manifests = render(chart, mode)
    mounts = {m["mountPath"] for m in executor(manifests).get("volumeMounts", [])}
    assert mounts == {"/var/lib/doracache/pages"}
    assert "DORA_WORKER_SECURITY_TOKEN" not in env_of(executor(manifests))


def test_daemonset_pages_on_a_pod_volume_cannot_be_shared(chart: helm.Chart) -> None:
    # Another pod's emptyDir or claim is out of reach: the executor reads over HTTP only.
    for kind in ("emptyDir", "ephemeral"):
        manifests = render(chart, {"storage": {"pages": {"type": kind}}})
        container = executor(manifests)
        assert "volumeMounts" not in container
        assert ROOT_ENV not in env_of(container)
        assert "volumes" not in pod_template(manifests)["spec"]


@pytest.mark.parametrize("mode", MODES.values(), ids=MODES.keys())
def test_short_circuit_mount_can_be_turned_off(chart: helm.Chart, mode: dict[str, str]) -> None:
    container = executor(render(chart, {**mode, "executor": {"shortCircuit": False}}))
    assert "volumeMounts" not in container
    assert ROOT_ENV not in env_of(container)


@pytest.mark.parametrize("mode", MODES.values(), ids=MODES.keys())
def test_every_executor_mount_has_a_volume_and_validates(
    chart: helm.Chart, mode: dict[str, str]
) -> None:
    extra = {"name": "scratch", "emptyDir": {}}
    pod = pod_template(render(chart, {**mode, "executor": {"extraVolumes": [extra]}}))
    kubernetes_validate.validate(pod, KUBE_VERSION, strict=True)
    volumes = {v["name"] for v in pod["spec"]["volumes"]}
    assert "scratch" in volumes
    for container in pod["spec"]["containers"] + pod["spec"].get("initContainers", []):
        assert {m["name"] for m in container.get("volumeMounts", [])} <= volumes


# --- daemonset mode: finding the node's worker -----------------------------------------------


def test_daemonset_executor_reaches_its_node_worker_through_the_service(chart: helm.Chart) -> None:
    manifests = render(chart)
    env = env_of(executor(manifests))
    assert env["DORA_USER_WORKERS"]["value"] == f"{FULLNAME}.{NAMESPACE}.svc:28080"
    assert "initContainers" not in pod_template(manifests)["spec"]  # no worker in the pod


def test_daemonset_executor_uses_the_node_ip_when_the_worker_is_published_there(
    chart: helm.Chart,
) -> None:
    for published in ({"hostPort": True}, {"hostNetwork": True}):
        container = executor(render(chart, {"daemonset": published}))
        names = [entry["name"] for entry in container["env"]]
        env = env_of(container)
        assert env["HOST_IP"]["valueFrom"] == {"fieldRef": {"fieldPath": "status.hostIP"}}
        # $(HOST_IP) expands only from a variable defined before it.
        assert names.index("HOST_IP") < names.index("DORA_USER_WORKERS")
        assert env["DORA_USER_WORKERS"]["value"] == "$(HOST_IP):28080"


def test_daemonset_executor_without_a_way_to_the_worker_is_refused(chart: helm.Chart) -> None:
    with pytest.raises(helm.HelmRenderError, match="service.enabled, daemonset.hostPort"):
        render(chart, {"service": {"enabled": False}})
    manifests = render(chart, {"service": {"enabled": False}, "executor": {"podTemplate": False}})
    assert kinds(manifests).count("ConfigMap") == 1


def test_executor_values_reach_the_template(chart: helm.Chart) -> None:
    values = {
        "executor": {
            "containerName": "executor",
            "env": [{"name": "DORA_USER_FILE_METADATA_SYNC_INTERVAL", "value": "30s"}],
            "podLabels": {"team": "lake"},
            "podAnnotations": {"note": "x"},
            "podSecurityContext": {"fsGroup": 185},
        }
    }
    for mode in MODES.values():
        pod = pod_template(render(chart, {**values, **mode}))
        (container,) = pod["spec"]["containers"]
        assert container["name"] == "executor"
        assert env_of(container)["DORA_USER_FILE_METADATA_SYNC_INTERVAL"]["value"] == "30s"
        assert pod["metadata"]["labels"]["team"] == "lake"
        assert pod["metadata"]["annotations"]["note"] == "x"
        assert pod["spec"]["securityContext"] == {"fsGroup": 185, "supplementalGroups": [10001]}
