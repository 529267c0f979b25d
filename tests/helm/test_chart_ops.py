"""The chart's operations values: Prometheus scraping (pod annotations, ServiceMonitor,
PodMonitor), the generated token, and a stop that lets the worker finish in-flight reads."""

from __future__ import annotations

import base64
import re
from typing import Any

import helm_python as helm
import pytest

from tests.helm.crds import ResourceInvalid, validate_custom
from tests.helm.test_chart import (
    FULLNAME,
    SIDECAR,
    Manifest,
    env_of,
    kinds,
    one,
    pod_spec,
    pod_template,
    render,
    worker_container,
)
from worker.server import GRACEFUL_SECONDS

SIDECAR_ON_ALL = {"mode": "sidecar", "properties": {"dora.worker.http.bind.host": "0.0.0.0"}}
MONITORS = {"metrics": {"serviceMonitor": {"enabled": True}, "podMonitor": {"enabled": True}}}
SCRAPE_KEYS = {"prometheus.io/scrape", "prometheus.io/port", "prometheus.io/path"}


def daemonset_pod(manifests: list[Manifest]) -> Manifest:
    template: Manifest = one(manifests, "DaemonSet", FULLNAME)["spec"]["template"]
    return template


def secret_ref(container: Manifest, name: str) -> tuple[str, str]:
    ref = env_of(container)[name]["valueFrom"]["secretKeyRef"]
    return ref["name"], ref["key"]


def executor(manifests: list[Manifest]) -> Manifest:
    container: Manifest = pod_template(manifests)["spec"]["containers"][0]
    return container


# --- scraping ---------------------------------------------------------------------------------


def test_worker_pods_carry_scrape_annotations(chart: helm.Chart) -> None:
    annotations = daemonset_pod(render(chart, {"worker": {"port": 9100}}))["metadata"][
        "annotations"
    ]
    assert annotations["prometheus.io/scrape"] == "true"
    assert annotations["prometheus.io/port"] == "9100"
    assert annotations["prometheus.io/path"] == "/metrics"


def test_scrape_annotations_can_be_turned_off(chart: helm.Chart) -> None:
    pod = daemonset_pod(render(chart, {"metrics": {"podAnnotations": False}}))
    assert not SCRAPE_KEYS & pod["metadata"]["annotations"].keys()


def test_a_loopback_sidecar_is_not_advertised_for_scraping(chart: helm.Chart) -> None:
    # Prometheus scrapes the pod IP, which a worker on 127.0.0.1 does not listen on.
    assert not SCRAPE_KEYS & pod_template(render(chart, SIDECAR))["metadata"]["annotations"].keys()
    annotations = pod_template(render(chart, SIDECAR_ON_ALL))["metadata"]["annotations"]
    assert annotations.keys() >= SCRAPE_KEYS


def test_no_monitor_by_default(chart: helm.Chart) -> None:
    for values in (None, SIDECAR_ON_ALL):
        assert not {"ServiceMonitor", "PodMonitor"} & set(kinds(render(chart, values)))


def test_service_monitor_selects_the_worker_service(chart: helm.Chart) -> None:
    manifests = render(chart, MONITORS)
    monitor = one(manifests, "ServiceMonitor", FULLNAME)
    validate_custom(monitor)
    service = one(manifests, "Service", FULLNAME)
    selector = monitor["spec"]["selector"]["matchLabels"]
    assert selector.items() <= service["metadata"]["labels"].items()
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["port"] in {port["name"] for port in service["spec"]["ports"]}
    assert endpoint["path"] == "/metrics"
    assert (endpoint["interval"], endpoint["scrapeTimeout"]) == ("30s", "10s")


@pytest.mark.parametrize("values", [MONITORS, SIDECAR_ON_ALL], ids=["daemonset", "sidecar"])
def test_pod_monitor_selects_the_pods_running_a_worker(
    chart: helm.Chart, values: dict[str, Any]
) -> None:
    values = {**values, "metrics": {"podMonitor": {"enabled": True}}}
    manifests = render(chart, values)
    monitor = one(manifests, "PodMonitor", FULLNAME)
    validate_custom(monitor)
    pod = pod_template(manifests) if values.get("mode") == "sidecar" else daemonset_pod(manifests)
    assert monitor["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
    (endpoint,) = monitor["spec"]["podMetricsEndpoints"]
    worker = worker_container(pod["spec"])
    assert endpoint["port"] in {port["name"] for port in worker["ports"]}


def test_monitors_send_the_token_in_force(chart: helm.Chart) -> None:
    # /metrics needs the token like every route but the probes.
    generated = render(chart, MONITORS)
    given = render(chart, {**MONITORS, "auth": {"existingSecret": "t", "existingSecretKey": "k"}})
    monitors = (("ServiceMonitor", "endpoints"), ("PodMonitor", "podMetricsEndpoints"))
    for manifests, ref in ((generated, (FULLNAME, "token")), (given, ("t", "k"))):
        worker = worker_container(pod_spec(manifests))
        assert secret_ref(worker, "DORA_WORKER_SECURITY_TOKEN") == ref
        for kind, endpoints in monitors:
            (endpoint,) = one(manifests, kind, FULLNAME)["spec"][endpoints]
            credentials = endpoint["authorization"]["credentials"]
            assert endpoint["authorization"]["type"] == "Bearer"
            assert (credentials["name"], credentials["key"]) == ref
    without = render(chart, {**MONITORS, "auth": {"generate": False}})
    (endpoint,) = one(without, "ServiceMonitor", FULLNAME)["spec"]["endpoints"]
    assert "authorization" not in endpoint


def test_monitor_options_reach_the_endpoint(chart: helm.Chart) -> None:
    relabel = [{"action": "drop", "sourceLabels": ["__name__"], "regex": "python_gc_.*"}]
    values = {
        "metrics": {
            "serviceMonitor": {
                "enabled": True,
                "labels": {"release": "kube-prometheus"},
                "interval": "",
                "scrapeTimeout": "",
                "metricRelabelings": relabel,
            }
        }
    }
    monitor = one(render(chart, values), "ServiceMonitor", FULLNAME)
    validate_custom(monitor)
    assert monitor["metadata"]["labels"]["release"] == "kube-prometheus"
    (endpoint,) = monitor["spec"]["endpoints"]
    assert "interval" not in endpoint
    assert "scrapeTimeout" not in endpoint
    assert endpoint["metricRelabelings"] == relabel


@pytest.mark.parametrize("kind", ["serviceMonitor", "podMonitor"])
def test_a_monitor_of_a_loopback_worker_is_refused(chart: helm.Chart, kind: str) -> None:
    with pytest.raises(helm.HelmRenderError, match=f"metrics.{kind}.enabled needs a worker"):
        render(chart, {"mode": "sidecar", "metrics": {kind: {"enabled": True}}})


def test_a_service_monitor_needs_the_service(chart: helm.Chart) -> None:
    monitor = {"metrics": {"serviceMonitor": {"enabled": True}}}
    for values in ({**monitor, "service": {"enabled": False}}, {**monitor, **SIDECAR_ON_ALL}):
        with pytest.raises(helm.HelmRenderError, match="use metrics.podMonitor"):
            render(chart, values)


def test_monitor_validation_is_strict(chart: helm.Chart) -> None:
    # Proves the checks above can fail: the CRD's types and its set of fields are enforced.
    monitor = one(render(chart, MONITORS), "ServiceMonitor", FULLNAME)
    monitor["spec"]["endpoints"][0]["port"] = 28080
    with pytest.raises(ResourceInvalid, match="port"):
        validate_custom(monitor)
    monitor = one(render(chart, MONITORS), "ServiceMonitor", FULLNAME)
    monitor["spec"]["endpoints"][0]["bearerTokenSecrett"] = {"name": "x"}
    with pytest.raises(ResourceInvalid, match=r"spec\.endpoints\[0\]\.bearerTokenSecrett"):
        validate_custom(monitor)


# --- the token --------------------------------------------------------------------------------


def generated_token(manifests: list[Manifest]) -> str:
    secret = one(manifests, "Secret", FULLNAME)
    return base64.b64decode(secret["data"]["token"]).decode()


def test_daemonset_mode_generates_a_token_for_worker_and_executors(chart: helm.Chart) -> None:
    manifests = render(chart)
    token = generated_token(manifests)
    assert re.fullmatch(r"[A-Za-z0-9]{48}", token)
    worker = worker_container(pod_spec(manifests))
    assert secret_ref(worker, "DORA_WORKER_SECURITY_TOKEN") == (FULLNAME, "token")
    assert secret_ref(executor(manifests), "DORA_USER_CLIENT_TOKEN") == (FULLNAME, "token")
    assert "DORA_WORKER_SECURITY_TOKEN" not in env_of(executor(manifests))


def test_rendering_again_does_not_roll_the_workers(chart: helm.Chart) -> None:
    # Without a cluster `lookup` finds no Secret, so each render draws a new token; the pods'
    # checksum covers the values instead, so it cannot change by itself.
    first, second = render(chart), render(chart)
    assert generated_token(first) != generated_token(second)
    annotations = [daemonset_pod(m)["metadata"]["annotations"] for m in (first, second)]
    assert annotations[0]["checksum/secret"] == annotations[1]["checksum/secret"]
    changed = daemonset_pod(render(chart, {"auth": {"token": "new"}}))["metadata"]["annotations"]
    assert changed["checksum/secret"] != annotations[0]["checksum/secret"]


def test_a_given_token_is_used_as_it_is(chart: helm.Chart) -> None:
    manifests = render(chart, {"auth": {"token": "chosen-token"}})
    assert generated_token(manifests) == "chosen-token"


@pytest.mark.parametrize(
    "values",
    [SIDECAR, {"auth": {"generate": False}}, {"auth": {"existingSecret": "mine"}}],
    ids=["loopback-sidecar", "generate-off", "existing-secret"],
)
def test_no_token_is_generated(chart: helm.Chart, values: dict[str, Any]) -> None:
    assert "Secret" not in kinds(render(chart, values))


def test_a_sidecar_listening_beyond_loopback_gets_a_token(chart: helm.Chart) -> None:
    manifests = render(chart, SIDECAR_ON_ALL)
    assert generated_token(manifests)
    assert secret_ref(executor(manifests), "DORA_USER_CLIENT_TOKEN") == (FULLNAME, "token")
    worker = worker_container(pod_template(manifests)["spec"])
    assert secret_ref(worker, "DORA_WORKER_SECURITY_TOKEN") == (FULLNAME, "token")


# --- stopping ----------------------------------------------------------------------------------


def test_the_grace_period_covers_pre_stop_and_graceful_shutdown(chart: helm.Chart) -> None:
    spec = pod_spec(render(chart))
    sleep = worker_container(spec)["lifecycle"]["preStop"]["exec"]["command"]
    assert sleep[0] == "sleep"
    # After the preStop sleep the worker gets SIGTERM and may finish reads for GRACEFUL_SECONDS,
    # then flushes: all of it must fit before SIGKILL.
    assert spec["terminationGracePeriodSeconds"] > int(sleep[1]) + GRACEFUL_SECONDS


def test_pre_stop_can_be_turned_off_and_is_daemonset_only(chart: helm.Chart) -> None:
    worker = worker_container(pod_spec(render(chart, {"daemonset": {"preStopSleepSeconds": 0}})))
    assert "lifecycle" not in worker
    # A sidecar is stopped after its executor has exited: nothing is left to drain.
    assert "lifecycle" not in worker_container(pod_template(render(chart, SIDECAR))["spec"])
