"""values.schema.json: it declares every value of values.yaml, and Helm (install, upgrade,
template, lint) refuses a misspelt key, a wrong type or a value outside an enum, naming it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import helm_python as helm
import pytest
import yaml

from tests.helm.test_chart import CHART, VALUE_SETS

SCHEMA = json.loads((CHART / "values.schema.json").read_text())
DEFAULTS = yaml.safe_load((CHART / "values.yaml").read_text())


def resolve(node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        node = SCHEMA["definitions"][node["$ref"].rsplit("/", 1)[1]]
    return node


def object_paths(value: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Every path of values.yaml whose value is a map the chart defines key by key."""
    if isinstance(value, dict) and path != ("properties",):
        yield path
        for key, child in value.items():
            yield from object_paths(child, (*path, key))


def nested(path: tuple[str, ...], leaf: Any) -> dict[str, Any]:
    values: Any = leaf
    for key in reversed(path):
        values = {key: values}
    result: dict[str, Any] = values
    return result


def test_every_value_is_declared() -> None:
    def walk(value: Any, node: dict[str, Any], path: str) -> list[str]:
        node = resolve(node)
        if not isinstance(value, dict) or "properties" not in node:
            return []
        missing = [f"{path}.{key}" for key in value if key not in node["properties"]]
        return missing + [
            found
            for key, child in value.items()
            if key in node["properties"]
            for found in walk(child, node["properties"][key], f"{path}.{key}")
        ]

    assert walk(DEFAULTS, SCHEMA, "") == []


@pytest.mark.parametrize("values", VALUE_SETS.values(), ids=VALUE_SETS.keys())
def test_the_tested_values_pass(chart: helm.Chart, values: dict[str, Any] | None) -> None:
    chart.validate_schema(values)


# Maps whose keys are the user's (labels, resources, Kubernetes objects) take any key.
OPEN_MAPS = {
    ("worker", "resources", "requests"),
    ("worker", "resources", "limits"),
    ("worker", "securityContext"),
    ("worker", "securityContext", "capabilities"),
    ("worker", "securityContext", "seccompProfile"),
    ("volumePermissions", "resources", "requests"),
    ("volumePermissions", "resources", "limits"),
    ("daemonset", "podAnnotations"),
    ("daemonset", "podLabels"),
    ("daemonset", "podSecurityContext"),
    ("daemonset", "podSecurityContext", "seccompProfile"),
    ("serviceAccount", "annotations"),
    ("executor", "podAnnotations"),
    ("executor", "podLabels"),
    ("executor", "podSecurityContext"),
    ("metrics", "serviceMonitor", "labels"),
    ("metrics", "podMonitor", "labels"),
    ("nodeSelector",),
    ("affinity",),
}
CLOSED_MAPS = [p for p in object_paths(DEFAULTS) if p not in OPEN_MAPS]


@pytest.mark.parametrize("path", CLOSED_MAPS, ids=[".".join(p) or "<top>" for p in CLOSED_MAPS])
def test_a_misspelt_key_is_refused_at_every_level(chart: helm.Chart, path: tuple[str, ...]) -> None:
    with pytest.raises(helm.HelmValuesError, match="additional propert.*'enabeld' not allowed"):
        chart.validate_schema(nested((*path, "enabeld"), True))


def test_the_open_maps_are_the_users(chart: helm.Chart) -> None:
    # A label or annotation map takes any key, but only string values.
    chart.validate_schema({"nodeSelector": {"doracache.io/any-key": "x"}})
    with pytest.raises(helm.HelmValuesError, match="nodeSelector"):
        chart.validate_schema({"nodeSelector": {"cache": True}})


@pytest.mark.parametrize(
    ("values", "where"),
    [
        ({"mode": "deployment"}, "/mode"),
        ({"image": {"pullPolicy": "Sometimes"}}, "/image/pullPolicy"),
        ({"image": {"repository": ""}}, "/image/repository"),
        ({"worker": {"port": "28080"}}, "/worker/port"),
        ({"worker": {"port": 70000}}, "/worker/port"),
        ({"worker": {"probes": "fast"}}, "/worker/probes"),
        ({"worker": {"probes": {"liveness": {"periodSeconds": 0}}}}, "/worker/probes/liveness"),
        ({"worker": {"probes": {"liveness": {"httpGet": {}}}}}, "/worker/probes/liveness"),
        ({"worker": {"extraEnv": [{"value": "no name"}]}}, "/worker/extraEnv/0"),
        ({"worker": {"resources": {"requests": {"memory": "lots"}}}}, "/worker/resources"),
        ({"properties": {"worker.port": 1}}, "worker.port"),
        ({"properties": {"dora.worker.ufs.roots": ["s3://a"]}}, "/properties"),
        ({"auth": {"generate": "yes"}}, "/auth/generate"),
        ({"storage": {"pages": {"type": "nfs"}}}, "/storage/pages/type"),
        ({"storage": {"pages": {"mountPath": "relative/pages"}}}, "/storage/pages/mountPath"),
        ({"daemonset": {"terminationGracePeriodSeconds": -1}}, "/daemonset"),
        ({"daemonset": {"updateStrategy": {"type": "Recreate"}}}, "/daemonset/updateStrategy"),
        ({"executor": {"containerName": "Executor_1"}}, "/executor/containerName"),
        ({"metrics": {"serviceMonitor": {"interval": "30 seconds"}}}, "/metrics/serviceMonitor"),
        ({"metrics": {"podMonitor": {"enabled": "true"}}}, "/metrics/podMonitor/enabled"),
        ({"tolerations": [{"key": "a", "effect": "NoRun"}]}, "/tolerations/0/effect"),
        ({"imagePullSecrets": ["registry"]}, "/imagePullSecrets/0"),
    ],
)
def test_bad_values_are_refused_by_name(
    chart: helm.Chart, values: dict[str, Any], where: str
) -> None:
    with pytest.raises(helm.HelmValuesError) as refused:
        chart.validate_schema(values)
    assert where in str(refused.value)


def test_a_required_value_cannot_be_removed(chart: helm.Chart) -> None:
    # null deletes a key in Helm's merge: the schema then misses what the templates need.
    with pytest.raises(helm.HelmValuesError, match="port"):
        chart.validate_schema({"worker": {"port": None}})


def test_render_and_lint_refuse_what_the_schema_refuses(chart: helm.Chart) -> None:
    typo = {"worker": {"prot": 9000}}
    with pytest.raises(helm.HelmValuesError, match="'prot' not allowed"):
        chart.render(typo, name="rel", namespace="spark")
    report = helm.lint(CHART, typo, strict=True)
    assert any("'prot' not allowed" in message["error"] for message in report["messages"])
