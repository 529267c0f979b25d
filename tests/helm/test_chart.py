"""The Helm chart (helm/doracache): linted and rendered by the real Helm SDK (helm-python-sdk binds
Helm's Go library in-process, so no helm binary and no cluster are needed), every manifest
validated against the Kubernetes schemas (kubernetes-validate, strict), and the rendered
dora-site.properties loaded by doracache's own configuration loader."""

from __future__ import annotations

import base64
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import helm_python as helm
import kubernetes_validate
import pytest
import yaml

from config import ConfigError, Registry, load_config
from config.loader import NON_KEY_ENV, parse_properties
from tests.helm.crds import is_custom, validate_custom
from worker.keys import build_registry

CHART = Path(__file__).resolve().parents[2] / "helm" / "doracache"
KUBE_VERSION = kubernetes_validate.utils.latest_version()
RELEASE = "rel"
NAMESPACE = "spark"
FULLNAME = "rel-doracache"
CONF_FILE = "/etc/doracache/dora-site.properties"

Manifest = dict[str, Any]

SIDECAR: dict[str, Any] = {"mode": "sidecar"}
# Every optional branch of the chart switched on, to validate what they render.
EVERYTHING: dict[str, Any] = {
    "auth": {"token": "s3cr3t-token"},
    "s3": {"accessKeyId": "AKIAEXAMPLE", "secretAccessKey": "wJalrXUtnFEMI"},
    "properties": {
        "dora.worker.ufs.roots": "s3://analytics/warehouse,file:///data",
        "dora.ufs.s3.endpoint": "http://minio.storage:9000",
        "dora.ufs.s3.region": "eu-west-1",
        "dora.worker.ufs.file.status.cache.size": 1000000,
        "dora.ufs.s3.anonymous": False,
    },
    "storage": {
        "pages": {"type": "ephemeral", "storageClassName": "local-nvme", "size": "100Gi"},
        "metastore": {"type": "emptyDir", "sizeLimit": "1Gi"},
    },
    "worker": {
        "extraArgs": ["-Ddora.worker.page.store.evictor=lfu"],
        "extraEnv": [{"name": "DORA_UFS_RETRY_MAX_ATTEMPTS", "value": "5"}],
    },
    "imagePullSecrets": [{"name": "registry"}],
    "nodeSelector": {"doracache.io/cache": "nvme"},
    "tolerations": [{"key": "spark", "operator": "Exists", "effect": "NoSchedule"}],
    "affinity": {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}
                        ]
                    }
                ]
            }
        }
    },
    "daemonset": {"hostNetwork": True, "priorityClassName": "system-node-critical"},
    "serviceAccount": {"annotations": {"eks.amazonaws.com/role-arn": "arn:aws:iam::1:role/dora"}},
    "executor": {"env": [{"name": "DORA_USER_FILE_METADATA_SYNC_INTERVAL", "value": "30s"}]},
}
VALUE_SETS = {
    "daemonset": None,
    "sidecar": SIDECAR,
    "daemonset-everything": EVERYTHING,
    "sidecar-everything": {**EVERYTHING, "mode": "sidecar"},
    "daemonset-monitors": {
        "metrics": {
            "serviceMonitor": {"enabled": True, "labels": {"release": "prometheus"}},
            "podMonitor": {
                "enabled": True,
                "interval": "1m",
                "scrapeTimeout": "20s",
                "metricRelabelings": [
                    {"action": "drop", "sourceLabels": ["__name__"], "regex": "python_gc_.*"}
                ],
            },
        },
        "auth": {"existingSecret": "dora-token", "existingSecretKey": "bearer"},
    },
    "sidecar-monitor": {
        "mode": "sidecar",
        "properties": {"dora.worker.http.bind.host": "0.0.0.0"},
        "metrics": {"podMonitor": {"enabled": True}},
    },
    "daemonset-hostpath-hostport": {
        "daemonset": {"hostPort": True},
        "auth": {"existingSecret": "t"},
    },
}


@pytest.fixture(scope="module")
def registry() -> Registry:
    return build_registry()


def render(chart: helm.Chart, values: dict[str, Any] | None = None) -> list[Manifest]:
    """`helm template`: every rendered object, NOTES.txt left out."""
    rendered = chart.render(values, name=RELEASE, namespace=NAMESPACE)
    manifests: list[Manifest] = []
    for path, text in sorted(rendered.items()):
        if not path.endswith("NOTES.txt"):
            manifests.extend(doc for doc in yaml.safe_load_all(text) if doc)
    return manifests


def notes(chart: helm.Chart, values: dict[str, Any] | None = None) -> str:
    rendered = chart.render(values, name=RELEASE, namespace=NAMESPACE)
    return next(text for path, text in rendered.items() if path.endswith("NOTES.txt"))


def one(manifests: list[Manifest], kind: str, name: str) -> Manifest:
    found = [m for m in manifests if m["kind"] == kind and m["metadata"]["name"] == name]
    assert len(found) == 1, f"expected one {kind} {name}, got {[m['kind'] for m in manifests]}"
    return found[0]


def kinds(manifests: list[Manifest]) -> list[str]:
    return sorted(m["kind"] for m in manifests)


def site_properties(manifests: list[Manifest]) -> str:
    text: str = one(manifests, "ConfigMap", f"{FULLNAME}-config")["data"]["dora-site.properties"]
    return text


def pod_template(manifests: list[Manifest]) -> Manifest:
    holder = one(manifests, "ConfigMap", f"{FULLNAME}-executor-pod-template")
    pod: Manifest = yaml.safe_load(holder["data"]["executor-pod-template.yaml"])
    return pod


def pod_spec(manifests: list[Manifest]) -> Manifest:
    """The pod spec that runs the worker, in either mode."""
    daemonsets = [m for m in manifests if m["kind"] == "DaemonSet"]
    if daemonsets:
        spec: Manifest = daemonsets[0]["spec"]["template"]["spec"]
        return spec
    spec = pod_template(manifests)["spec"]
    return spec


def worker_container(spec: Manifest) -> Manifest:
    containers = spec["containers"] + spec.get("initContainers", [])
    return next(c for c in containers if c["name"] == "doracache-worker")


def env_of(container: Manifest) -> dict[str, Manifest]:
    return {entry["name"]: entry for entry in container.get("env", [])}


def validate(manifest: Manifest) -> None:
    """Validate against the Kubernetes schemas, or an operator's CRD for its kinds."""
    if is_custom(manifest):
        validate_custom(manifest)
    else:
        kubernetes_validate.validate(manifest, KUBE_VERSION, strict=True)


def load_site(text: str, tmp_path: Path, environ: dict[str, str] | None = None) -> Any:
    site = tmp_path / "dora-site.properties"
    site.write_text(text)
    return load_config(build_registry(), conf_file=str(site), environ=environ or {})


# --- helm lint ------------------------------------------------------------------------------


@pytest.mark.parametrize("values", VALUE_SETS.values(), ids=VALUE_SETS.keys())
def test_helm_lint_strict_passes(values: dict[str, Any] | None) -> None:
    report = helm.lint(CHART, values, strict=True, kube_version=f"v{KUBE_VERSION}")
    warnings = [m for m in report["messages"] if m["severity"] >= 2]
    assert report["errors"] == []
    assert warnings == []


def test_helm_lint_reports_a_broken_render() -> None:
    # Proves the lint above would fail: a value of the wrong shape breaks the templates.
    report = helm.lint(CHART, {"worker": {"probes": "fast"}}, strict=True)
    assert report["errors"]


# --- helm template ----------------------------------------------------------------------------


def test_daemonset_mode_renders_a_worker_per_node(chart: helm.Chart) -> None:
    manifests = render(chart)
    assert kinds(manifests) == [
        "ConfigMap",
        "ConfigMap",
        "DaemonSet",
        "Secret",
        "Service",
        "ServiceAccount",
    ]
    service = one(manifests, "Service", FULLNAME)
    assert service["spec"]["internalTrafficPolicy"] == "Local"
    spec = pod_spec(manifests)
    assert spec["serviceAccountName"] == FULLNAME
    assert spec["automountServiceAccountToken"] is False
    assert "hostNetwork" not in spec
    assert "restartPolicy" not in worker_container(spec)


def test_sidecar_mode_renders_only_configuration(chart: helm.Chart) -> None:
    manifests = render(chart, SIDECAR)
    assert kinds(manifests) == ["ConfigMap", "ConfigMap"]


@pytest.mark.parametrize("values", VALUE_SETS.values(), ids=VALUE_SETS.keys())
def test_every_manifest_validates_against_kubernetes(
    chart: helm.Chart, values: dict[str, Any] | None
) -> None:
    manifests = render(chart, values)
    if any(m["metadata"]["name"].endswith("-executor-pod-template") for m in manifests):
        manifests.append(pod_template(manifests))
    for manifest in manifests:
        validate(manifest)


def test_validation_is_strict(chart: helm.Chart) -> None:
    daemonset = one(render(chart), "DaemonSet", FULLNAME)
    worker_container(daemonset["spec"]["template"]["spec"])["livenessProbes"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(daemonset, KUBE_VERSION, strict=True)


def test_unknown_mode_is_refused(chart: helm.Chart) -> None:
    with pytest.raises(helm.HelmValuesError, match=r"daemonset.*sidecar"):
        render(chart, {"mode": "deployment"})


def test_labels_follow_helm_conventions(chart: helm.Chart) -> None:
    for values in (None, SIDECAR):
        manifests = render(chart, values)
        for manifest in manifests:
            labels = manifest["metadata"]["labels"]
            assert labels["app.kubernetes.io/name"] == "doracache"
            assert labels["app.kubernetes.io/instance"] == RELEASE
            assert labels["app.kubernetes.io/managed-by"] == "Helm"
            assert labels["helm.sh/chart"] == "doracache-0.2.0"
            assert manifest["metadata"]["namespace"] == NAMESPACE
    daemonset = one(render(chart), "DaemonSet", FULLNAME)
    selector = daemonset["spec"]["selector"]["matchLabels"]
    pod_labels = daemonset["spec"]["template"]["metadata"]["labels"]
    assert selector.items() <= pod_labels.items()
    service = one(render(chart), "Service", FULLNAME)
    assert service["spec"]["selector"].items() <= pod_labels.items()


# --- the worker container -----------------------------------------------------------------


@pytest.mark.parametrize("values", [None, SIDECAR], ids=["daemonset", "sidecar"])
def test_worker_reads_the_rendered_site_file(
    chart: helm.Chart, values: dict[str, Any] | None
) -> None:
    manifests = render(chart, values)
    spec = pod_spec(manifests)
    worker = worker_container(spec)
    assert worker["command"] == ["dora", "worker", "start", "--conf", CONF_FILE]
    assert env_of(worker)["DORA_CONF_DIR"]["value"] == "/etc/doracache"
    mount = next(m for m in worker["volumeMounts"] if m["mountPath"] == "/etc/doracache")
    volume = next(v for v in spec["volumes"] if v["name"] == mount["name"])
    config_map = one(manifests, "ConfigMap", volume["configMap"]["name"])
    assert "dora-site.properties" in config_map["data"]


@pytest.mark.parametrize("values", VALUE_SETS.values(), ids=VALUE_SETS.keys())
def test_every_mount_has_a_volume(chart: helm.Chart, values: dict[str, Any] | None) -> None:
    spec = pod_spec(render(chart, values))
    volumes = {v["name"] for v in spec["volumes"]}
    for container in spec["containers"] + spec.get("initContainers", []):
        assert {m["name"] for m in container.get("volumeMounts", [])} <= volumes


def test_daemonset_probes_ask_healthz_and_readyz_over_http(chart: helm.Chart) -> None:
    worker = worker_container(pod_spec(render(chart)))
    port = next(
        p for p in worker["ports"] if p["name"] == worker["livenessProbe"]["httpGet"]["port"]
    )
    assert port["containerPort"] == 28080
    assert worker["startupProbe"]["httpGet"]["path"] == "/healthz"
    assert worker["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert worker["readinessProbe"]["httpGet"]["path"] == "/readyz"


def test_worker_is_not_root_and_cannot_escalate(chart: helm.Chart) -> None:
    for values in (None, SIDECAR):
        context = worker_container(pod_spec(render(chart, values)))["securityContext"]
        assert context["runAsNonRoot"] is True
        assert context["runAsUser"] != 0
        assert context["allowPrivilegeEscalation"] is False
        assert context["readOnlyRootFilesystem"] is True
        assert context["capabilities"]["drop"] == ["ALL"]


def test_hostpath_directories_are_handed_to_the_worker_user(chart: helm.Chart) -> None:
    spec = pod_spec(render(chart))
    assert spec["volumes"][1]["hostPath"] == {
        "path": "/var/lib/doracache/pages",
        "type": "DirectoryOrCreate",
    }
    (init,) = spec["initContainers"]
    assert init["command"] == [
        "chown",
        "10001:10001",
        "/var/lib/doracache/pages",
        "/var/lib/doracache/metastore",
    ]
    assert init["securityContext"]["capabilities"] == {"drop": ["ALL"], "add": ["CHOWN"]}
    # Nothing to chown without a hostPath.
    spec = pod_spec(render(chart, EVERYTHING))
    assert "initContainers" not in spec


def test_host_network_and_host_port(chart: helm.Chart) -> None:
    spec = pod_spec(render(chart, {"daemonset": {"hostNetwork": True}}))
    assert spec["hostNetwork"] is True
    assert spec["dnsPolicy"] == "ClusterFirstWithHostNet"
    spec = pod_spec(render(chart, {"daemonset": {"hostPort": True}}))
    assert worker_container(spec)["ports"][0]["hostPort"] == 28080


def test_image_scheduling_and_resources_come_from_values(chart: helm.Chart) -> None:
    values = {
        **EVERYTHING,
        "image": {"repository": "registry.local/dora", "tag": "1.2.3", "pullPolicy": "Always"},
    }
    for mode in ("daemonset", "sidecar"):
        spec = pod_spec(render(chart, {**values, "mode": mode}))
        worker = worker_container(spec)
        assert worker["image"] == "registry.local/dora:1.2.3"
        assert worker["imagePullPolicy"] == "Always"
        assert worker["resources"]["requests"] == {"cpu": "250m", "memory": "512Mi"}
        assert worker["args"] == ["-Ddora.worker.page.store.evictor=lfu"]
        assert spec["nodeSelector"] == EVERYTHING["nodeSelector"]
        assert spec["tolerations"] == EVERYTHING["tolerations"]
        assert spec["affinity"] == EVERYTHING["affinity"]
        assert spec["imagePullSecrets"] == [{"name": "registry"}]
    default = worker_container(pod_spec(render(chart)))
    assert default["image"] == "ghcr.io/doracache/doracache:0.1.0"


# --- sidecar mode: the executor pod template ------------------------------------------------


def test_pod_template_runs_the_worker_as_a_native_sidecar(chart: helm.Chart) -> None:
    pod = pod_template(render(chart, SIDECAR))
    assert (pod["apiVersion"], pod["kind"]) == ("v1", "Pod")
    kubernetes_validate.validate(pod, KUBE_VERSION, strict=True)
    (worker,) = pod["spec"]["initContainers"]
    assert worker["name"] == "doracache-worker"
    assert worker["restartPolicy"] == "Always"
    (executor,) = pod["spec"]["containers"]
    assert executor["name"] == "spark-kubernetes-executor"
    assert env_of(executor)["DORA_USER_WORKERS"]["value"] == "127.0.0.1:28080"
    # The executor pods are Spark's: the chart adds no service account or host network.
    assert not {"serviceAccountName", "hostNetwork"} & pod["spec"].keys()


def test_sidecar_probes_run_inside_the_pod_on_loopback(chart: helm.Chart) -> None:
    # The kubelet probes the pod IP, which a worker bound to 127.0.0.1 does not listen on.
    worker = worker_container(pod_template(render(chart, SIDECAR))["spec"])
    probe = ["python3", "/etc/doracache/probe.py", "28080"]
    assert worker["startupProbe"]["exec"]["command"] == [*probe, "/healthz"]
    assert worker["livenessProbe"]["exec"]["command"] == [*probe, "/healthz"]
    assert worker["readinessProbe"]["exec"]["command"] == [*probe, "/readyz"]


def test_sidecar_bound_to_all_interfaces_uses_http_probes(chart: helm.Chart) -> None:
    values = {"mode": "sidecar", "properties": {"dora.worker.http.bind.host": "0.0.0.0"}}
    worker = worker_container(pod_template(render(chart, values))["spec"])
    assert worker["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "dora-http"}
    assert worker["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "dora-http"}


def test_sidecar_defaults_to_pod_local_storage(chart: helm.Chart) -> None:
    spec = pod_template(render(chart, SIDECAR))["spec"]
    by_name = {v["name"]: v for v in spec["volumes"]}
    assert by_name["doracache-pages"] == {"name": "doracache-pages", "emptyDir": {}}
    assert by_name["doracache-metastore"] == {"name": "doracache-metastore", "emptyDir": {}}
    assert [c["name"] for c in spec["initContainers"]] == ["doracache-worker"]


class _Worker(BaseHTTPRequestHandler):
    """Stands in for the worker's /healthz and /readyz; remembers the Authorization header."""

    ready = True
    seen_auth: list[str | None] = []

    def do_GET(self) -> None:
        type(self).seen_auth.append(self.headers.get("Authorization"))
        ok = self.path == "/healthz" or (self.path == "/readyz" and type(self).ready)
        self.send_response(200 if ok else 503)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def fake_worker() -> Iterator[int]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Worker)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def test_rendered_probe_script_checks_the_worker(
    chart: helm.Chart, fake_worker: int, tmp_path: Path
) -> None:
    manifests = render(chart, SIDECAR)
    script = tmp_path / "probe.py"
    script.write_text(one(manifests, "ConfigMap", f"{FULLNAME}-config")["data"]["probe.py"])

    def probe(path: str, port: int = fake_worker, **env: str) -> int:
        run = subprocess.run(
            [sys.executable, str(script), str(port), path],
            env={"PATH": "/usr/bin:/bin", **env},
            capture_output=True,
            timeout=20,
            check=False,
        )
        return run.returncode

    _Worker.ready, _Worker.seen_auth = True, []
    assert probe("/healthz") == 0
    assert probe("/readyz", DORA_WORKER_SECURITY_TOKEN="tok") == 0
    assert _Worker.seen_auth == [None, "Bearer tok"]
    _Worker.ready = False
    assert probe("/readyz") == 1
    closed = ThreadingHTTPServer(("127.0.0.1", 0), _Worker)
    free_port = closed.server_address[1]
    closed.server_close()
    assert probe("/healthz", port=free_port) == 1


# --- dora-site.properties -----------------------------------------------------------------


@pytest.mark.parametrize("values", VALUE_SETS.values(), ids=VALUE_SETS.keys())
def test_site_file_has_only_registered_keys_and_loads(
    chart: helm.Chart, registry: Registry, values: dict[str, Any] | None, tmp_path: Path
) -> None:
    text = site_properties(render(chart, values))
    entries = parse_properties(text, "dora-site.properties")
    assert entries
    for key, _, _ in entries:
        assert registry.lookup(key).name == key
    config = load_site(text, tmp_path)
    for key, value, _ in entries:
        assert config.setting(key).text == value


def test_site_file_carries_the_values_properties(chart: helm.Chart, tmp_path: Path) -> None:
    text = site_properties(render(chart))
    rendered = {key: value for key, value, _ in parse_properties(text, "site")}
    for key, value in chart.values["properties"].items():
        if value not in (None, ""):
            assert rendered[key] == str(value)
    assert "dora.worker.ufs.roots" not in rendered  # empty: left to the worker's default
    config = load_site(text, tmp_path)
    assert config.setting("dora.worker.http.bind.host").text == "0.0.0.0"
    assert config.setting("dora.worker.http.port").value == 28080
    assert config.setting("dora.worker.page.store.dirs").value == ["/var/lib/doracache/pages"]
    assert config.setting("dora.worker.page.store.sizes").value == [10 * 1024**3]
    # A directory inside the volume: the lock file beside it must be writable too.
    assert config.setting("dora.worker.metastore.rocksdb.dir").value == (
        "/var/lib/doracache/metastore/rocksdb"
    )


def test_sidecar_worker_listens_on_loopback(chart: helm.Chart, tmp_path: Path) -> None:
    config = load_site(site_properties(render(chart, SIDECAR)), tmp_path)
    assert config.setting("dora.worker.http.bind.host").value == "127.0.0.1"


def test_site_file_dirs_are_the_mounted_volumes(chart: helm.Chart, tmp_path: Path) -> None:
    values = {"storage": {"pages": {"mountPath": "/cache/p"}, "metastore": {"mountPath": "/m"}}}
    for mode in ("daemonset", "sidecar"):
        manifests = render(chart, {**values, "mode": mode})
        config = load_site(site_properties(manifests), tmp_path)
        mounts = {m["mountPath"] for m in worker_container(pod_spec(manifests))["volumeMounts"]}
        assert config.setting("dora.worker.page.store.dirs").value == ["/cache/p"]
        assert config.setting("dora.worker.metastore.rocksdb.dir").value == "/m/rocksdb"
        assert {"/cache/p", "/m", config.setting("dora.work.dir").value} <= mounts


def test_numbers_and_booleans_reach_the_worker_intact(chart: helm.Chart, tmp_path: Path) -> None:
    # Helm hands YAML numbers to templates as float64, which Go prints as 1e+06.
    config = load_site(site_properties(render(chart, EVERYTHING)), tmp_path)
    assert config.setting("dora.worker.ufs.file.status.cache.size").value == 1_000_000
    assert config.setting("dora.ufs.s3.anonymous").value is False
    assert config.setting("dora.worker.ufs.roots").value == [
        "s3://analytics/warehouse",
        "file:///data",
    ]


def test_properties_override_and_remove_defaults(chart: helm.Chart, tmp_path: Path) -> None:
    values = {
        "properties": {
            "dora.worker.http.bind.host": "10.0.0.1",
            "dora.worker.page.store.evictor": None,
            "dora.worker.page.store.sizes": "1TB",
        }
    }
    text = site_properties(render(chart, values))
    assert "dora.worker.page.store.evictor" not in text
    config = load_site(text, tmp_path)
    assert config.setting("dora.worker.http.bind.host").value == "10.0.0.1"
    assert config.setting("dora.worker.page.store.sizes").value == [1024**4]


def test_unknown_property_is_caught_by_the_worker_loader(chart: helm.Chart, tmp_path: Path) -> None:
    # The chart passes keys through; the registry is what rejects a misspelling.
    text = site_properties(render(chart, {"properties": {"dora.worker.page.store.size": "1GB"}}))
    with pytest.raises(ConfigError, match=r"did you mean 'dora\.worker\.page\.store\.sizes'"):
        load_site(text, tmp_path)


@pytest.mark.parametrize(
    "key",
    ["dora.worker.security.token", "dora.ufs.s3.secret.access.key", "dora.ufs.s3.access.key.id"],
)
def test_secrets_are_refused_in_properties(chart: helm.Chart, key: str) -> None:
    with pytest.raises(helm.HelmRenderError, match="auth"):
        render(chart, {"properties": {key: "leaked"}})


def test_port_is_set_in_one_place(chart: helm.Chart, tmp_path: Path) -> None:
    with pytest.raises(helm.HelmRenderError, match=r"worker\.port"):
        render(chart, {"properties": {"dora.worker.http.port": 9000}})
    manifests = render(chart, {"worker": {"port": 9000}})
    config = load_site(site_properties(manifests), tmp_path)
    assert config.setting("dora.worker.http.port").value == 9000
    worker = worker_container(pod_spec(manifests))
    assert worker["ports"][0]["containerPort"] == 9000
    assert one(manifests, "Service", FULLNAME)["spec"]["ports"][0]["targetPort"] == "dora-http"
    sidecar = render(chart, {"worker": {"port": 9000}, "mode": "sidecar"})
    executor = pod_template(sidecar)["spec"]["containers"][0]
    assert env_of(executor)["DORA_USER_WORKERS"]["value"] == "127.0.0.1:9000"


# --- secrets --------------------------------------------------------------------------------


def secret_ref(container: Manifest, name: str) -> tuple[str, str]:
    ref = env_of(container)[name]["valueFrom"]["secretKeyRef"]
    return ref["name"], ref["key"]


def test_no_secret_without_a_token(chart: helm.Chart) -> None:
    # A sidecar on loopback needs none; in daemonset mode one is generated unless turned off.
    for values in (SIDECAR, {"auth": {"generate": False}}):
        manifests = render(chart, values)
        assert "Secret" not in kinds(manifests)
        assert "DORA_WORKER_SECURITY_TOKEN" not in env_of(worker_container(pod_spec(manifests)))


@pytest.mark.parametrize("mode", ["daemonset", "sidecar"])
def test_token_and_s3_keys_come_from_the_secret(chart: helm.Chart, mode: str) -> None:
    manifests = render(chart, {**EVERYTHING, "mode": mode})
    secret = one(manifests, "Secret", FULLNAME)
    data = {key: base64.b64decode(value).decode() for key, value in secret["data"].items()}
    worker = worker_container(pod_spec(manifests))
    expected = {
        "DORA_WORKER_SECURITY_TOKEN": "s3cr3t-token",
        "DORA_UFS_S3_ACCESS_KEY_ID": "AKIAEXAMPLE",
        "DORA_UFS_S3_SECRET_ACCESS_KEY": "wJalrXUtnFEMI",
    }
    for env_name, value in expected.items():
        name, key = secret_ref(worker, env_name)
        assert name == FULLNAME
        assert data[key] == value
    assert "s3cr3t" not in site_properties(manifests)
    if mode == "sidecar":
        executor = pod_template(manifests)["spec"]["containers"][0]
        # The executor's clients send the token under the client key; the worker checks it.
        assert secret_ref(executor, "DORA_USER_CLIENT_TOKEN") == (FULLNAME, "token")
        assert "DORA_WORKER_SECURITY_TOKEN" not in env_of(executor)
        assert "DORA_UFS_S3_SECRET_ACCESS_KEY" not in env_of(executor)


def test_existing_secrets_are_referenced_not_rendered(chart: helm.Chart) -> None:
    values = {
        "auth": {"existingSecret": "dora-token", "existingSecretKey": "bearer"},
        "s3": {"existingSecret": "dora-s3"},
    }
    manifests = render(chart, values)
    assert "Secret" not in kinds(manifests)
    worker = worker_container(pod_spec(manifests))
    assert secret_ref(worker, "DORA_WORKER_SECURITY_TOKEN") == ("dora-token", "bearer")
    assert secret_ref(worker, "DORA_UFS_S3_ACCESS_KEY_ID") == ("dora-s3", "access-key-id")
    assert secret_ref(worker, "DORA_UFS_S3_SECRET_ACCESS_KEY") == ("dora-s3", "secret-access-key")


def test_half_an_s3_key_pair_is_refused(chart: helm.Chart) -> None:
    with pytest.raises(helm.HelmRenderError, match="together"):
        render(chart, {"s3": {"accessKeyId": "AKIA"}})


@pytest.mark.parametrize("values", VALUE_SETS.values(), ids=VALUE_SETS.keys())
def test_environment_names_are_property_keys(
    chart: helm.Chart, registry: Registry, values: dict[str, Any] | None, tmp_path: Path
) -> None:
    # DORA_ + key upper-cased, dots to underscores; the loader rejects any other DORA_ name.
    manifests = render(chart, values)
    spec = pod_spec(manifests)
    by_env = registry.by_env()
    environ: dict[str, str] = {}
    for container in spec["containers"] + spec.get("initContainers", []):
        for name, entry in env_of(container).items():
            if name.startswith("DORA_") and name not in NON_KEY_ENV:
                assert name in by_env, name
                assert by_env[name].name.upper().replace(".", "_") == name
                environ[name] = entry.get("value", "from-a-secret")
    config = load_site(site_properties(manifests), tmp_path, environ)
    if "DORA_WORKER_SECURITY_TOKEN" in environ:
        assert config.setting("dora.worker.security.token").value == "from-a-secret"


# --- docs -----------------------------------------------------------------------------------


def test_every_values_key_is_documented() -> None:
    lines = (CHART / "values.yaml").read_text().splitlines()
    key = re.compile(r"^\s*[\w.\-/]+:")
    undocumented = [
        line.strip()
        for previous, line in zip(["#", *lines], lines, strict=False)
        if key.match(line) and not previous.strip().startswith("#")
    ]
    assert undocumented == []


def test_notes_guide_each_mode(chart: helm.Chart) -> None:
    daemonset = notes(chart)
    assert f"DORA_USER_WORKERS={FULLNAME}.{NAMESPACE}.svc:28080" in daemonset
    assert f"token from the Secret {FULLNAME} (key token)" in daemonset
    assert "executor-pod-template.yaml" in daemonset
    assert "no token is set" in notes(chart, {"auth": {"generate": False}})
    assert "dora.worker.ufs.roots is empty" in daemonset
    sidecar = notes(chart, {**EVERYTHING, "mode": "sidecar"})
    assert "spark.kubernetes.executor.podTemplateFile=executor-pod-template.yaml" in sidecar
    assert "roots is empty" not in sidecar
    assert "no token is set" not in sidecar
