"""The chart's cluster values: etcd endpoints become site properties, the worker advertises its
pod IP, and a sidecar (loopback-only) worker is refused a cluster."""

import helm_python as helm
import pytest

from tests.helm.test_chart import pod_spec, render, site_properties, worker_container

ENDPOINTS = "http://etcd-0.etcd-headless.etcd:2379,http://etcd-1.etcd-headless.etcd:2379"


def test_no_endpoints_no_cluster(chart: helm.Chart) -> None:
    manifests = render(chart)
    assert "dora.cluster" not in site_properties(manifests)
    env = worker_container(pod_spec(manifests)).get("env", [])
    assert "DORA_CLUSTER_ADVERTISE_HOST" not in {item["name"] for item in env}


def test_endpoints_and_name_reach_the_worker(chart: helm.Chart) -> None:
    manifests = render(chart, {"cluster": {"etcd": {"endpoints": ENDPOINTS}, "name": "lake"}})
    properties = site_properties(manifests)
    assert f"dora.cluster.etcd.endpoints={ENDPOINTS}" in properties.splitlines()
    assert "dora.cluster.name=lake" in properties.splitlines()
    env = {item["name"]: item for item in worker_container(pod_spec(manifests))["env"]}
    assert env["DORA_CLUSTER_ADVERTISE_HOST"]["valueFrom"] == {
        "fieldRef": {"fieldPath": "status.podIP"}
    }


def test_a_sidecar_worker_cannot_join(chart: helm.Chart) -> None:
    with pytest.raises(helm.HelmRenderError, match="cluster.etcd.endpoints needs mode: daemonset"):
        render(chart, {"mode": "sidecar", "cluster": {"etcd": {"endpoints": ENDPOINTS}}})
