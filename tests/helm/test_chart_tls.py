"""The chart's TLS values (tls.*): the worker's pair from a Secret or a cert-manager Certificate,
probes over HTTPS (inside the container when the worker requires client certificates), the CA
alone and the client pair mounted into the executor pod template with the client keys set, and
monitors that scrape over HTTPS. The rendered probe script is run against a real TLS server."""

from __future__ import annotations

import http.server
import ssl
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import helm_python as helm
import pytest

from config import ConfigError, Registry
from tests.helm.crds import validate_custom
from tests.helm.test_chart import (
    CHART,
    FULLNAME,
    KUBE_VERSION,
    NAMESPACE,
    Manifest,
    env_of,
    kinds,
    load_site,
    notes,
    one,
    pod_spec,
    pod_template,
    render,
    site_properties,
    validate,
    worker_container,
)
from worker.keys import build_registry

SECRET = {"tls": {"enabled": True, "secretName": "worker-tls"}}
ISSUER = {"name": "dora-ca", "kind": "ClusterIssuer", "group": "cert-manager.io"}
CERT_MANAGER = {"tls": {"enabled": True, "certManager": {"enabled": True, "issuerRef": ISSUER}}}
MUTUAL = {
    "tls": {
        "enabled": True,
        "clientAuth": True,
        "certManager": {"enabled": True, "issuerRef": ISSUER},
    }
}
MUTUAL_SECRETS = {
    "tls": {
        "enabled": True,
        "clientAuth": True,
        "secretName": "worker-tls",
        "clientSecretName": "executor-tls",
    }
}
MODES = {"daemonset": {}, "sidecar": {"mode": "sidecar"}}
TLS_SETS = {
    f"{mode}-{name}": {**values, **mode_values}
    for mode, mode_values in MODES.items()
    for name, values in {
        "secret": SECRET,
        "cert-manager": CERT_MANAGER,
        "mutual": MUTUAL,
        "mutual-secrets": MUTUAL_SECRETS,
    }.items()
}
TLS_SETS["daemonset-monitors"] = {
    **MUTUAL,
    "metrics": {"serviceMonitor": {"enabled": True}, "podMonitor": {"enabled": True}},
}


@pytest.fixture(scope="module")
def registry() -> Registry:
    """doracache's key registry, which must know the TLS keys the chart writes."""
    registry = build_registry()
    try:
        registry.lookup("dora.worker.tls.cert.file")
    except ConfigError:
        pytest.skip("this tree's registry has no dora.worker.tls.* keys yet")
    return registry


def executor(manifests: list[Manifest]) -> Manifest:
    container: Manifest = pod_template(manifests)["spec"]["containers"][0]
    return container


def executor_files(manifests: list[Manifest], name: str) -> tuple[str, Manifest]:
    """The file the executor's variable ``name`` names, and the volume it is mounted from."""
    container = executor(manifests)
    path: str = env_of(container)[name]["value"]
    return path, mounted_volume(pod_template(manifests)["spec"], container, path)


def mounted_volume(spec: Manifest, container: Manifest, path: str) -> Manifest:
    """The volume behind the mount holding ``path`` in ``container``."""
    mount = next(m for m in container["volumeMounts"] if path.startswith(m["mountPath"] + "/"))
    volume: Manifest = next(v for v in spec["volumes"] if v["name"] == mount["name"])
    assert mount.get("readOnly") is True
    return volume


def site(manifests: list[Manifest]) -> dict[str, str]:
    lines = site_properties(manifests).splitlines()
    return dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))


# --- render and validate ------------------------------------------------------------------


@pytest.mark.parametrize("values", TLS_SETS.values(), ids=TLS_SETS.keys())
def test_tls_values_lint_and_validate(chart: helm.Chart, values: dict[str, Any]) -> None:
    report = helm.lint(CHART, values, strict=True, kube_version=f"v{KUBE_VERSION}")
    assert report["errors"] == []
    assert [m for m in report["messages"] if m["severity"] >= 2] == []
    chart.validate_schema(values)
    manifests = render(chart, values)
    for manifest in [*manifests, pod_template(manifests)]:
        validate(manifest)
    spec = pod_spec(manifests)
    for pod in (spec, pod_template(manifests)["spec"]):
        volumes = {v["name"] for v in pod["volumes"]}
        for container in pod["containers"] + pod.get("initContainers", []):
            assert {m["name"] for m in container.get("volumeMounts", [])} <= volumes


@pytest.mark.parametrize("values", TLS_SETS.values(), ids=TLS_SETS.keys())
def test_the_tls_site_file_and_client_environment_load(
    chart: helm.Chart, registry: Registry, values: dict[str, Any], tmp_path: Path
) -> None:
    manifests = render(chart, values)
    config = load_site(site_properties(manifests), tmp_path)
    assert config.setting("dora.worker.tls.cert.file").value.endswith("/tls.crt")
    by_env = registry.by_env()
    client_env = {n: e["value"] for n, e in env_of(executor(manifests)).items() if "value" in e}
    tls_env = {name: value for name, value in client_env.items() if "_TLS_" in name}
    assert tls_env
    assert {by_env[name].name for name in tls_env} <= {
        "dora.user.tls.ca.file",
        "dora.user.tls.cert.file",
        "dora.user.tls.key.file",
    }


# --- the worker ---------------------------------------------------------------------------


def test_a_secret_gives_the_worker_its_pair_and_https_probes(chart: helm.Chart) -> None:
    manifests = render(chart, SECRET)
    properties = site(manifests)
    spec = pod_spec(manifests)
    worker = worker_container(spec)
    for key in ("dora.worker.tls.cert.file", "dora.worker.tls.key.file"):
        volume = mounted_volume(spec, worker, properties[key])
        assert volume["secret"] == {"secretName": "worker-tls"}
    assert "dora.worker.tls.client.ca.file" not in properties
    # The kubelet reaches the worker on the pod IP and does not verify the certificate.
    assert worker["livenessProbe"]["httpGet"] == {
        "path": "/healthz",
        "port": "dora-http",
        "scheme": "HTTPS",
    }
    assert worker["readinessProbe"]["httpGet"]["scheme"] == "HTTPS"
    assert "Certificate" not in kinds(manifests)


def test_without_tls_nothing_changes(chart: helm.Chart) -> None:
    manifests = render(chart)
    assert not [key for key in site(manifests) if ".tls." in key]
    assert "scheme" not in worker_container(pod_spec(manifests))["livenessProbe"]["httpGet"]
    assert env_of(executor(manifests))["DORA_USER_WORKERS"]["value"].startswith(FULLNAME)


def test_a_sidecar_on_loopback_probes_over_https_from_inside(chart: helm.Chart) -> None:
    worker = worker_container(pod_spec(render(chart, {**SECRET, "mode": "sidecar"})))
    probe = ["python3", "/etc/doracache/probe.py", "28080"]
    assert worker["livenessProbe"]["exec"]["command"] == [*probe, "/healthz", "https"]
    assert worker["readinessProbe"]["exec"]["command"] == [*probe, "/readyz", "https"]


@pytest.mark.parametrize("mode", MODES.values(), ids=MODES.keys())
def test_mutual_tls_requires_the_ca_and_probes_present_the_workers_pair(
    chart: helm.Chart, mode: dict[str, Any]
) -> None:
    manifests = render(chart, {**MUTUAL_SECRETS, **mode})
    properties = site(manifests)
    assert properties["dora.worker.tls.client.ca.file"] == "/etc/doracache-tls/ca.crt"
    worker = worker_container(pod_spec(manifests))
    pair = [properties["dora.worker.tls.cert.file"], properties["dora.worker.tls.key.file"]]
    for probe, path in (("startupProbe", "/healthz"), ("readinessProbe", "/readyz")):
        command = worker[probe]["exec"]["command"]
        assert command == ["python3", "/etc/doracache/probe.py", "28080", path, "https", *pair]


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"tls": {"enabled": True}}, r"tls\.enabled needs tls\.secretName"),
        ({"tls": {"clientAuth": True}}, r"tls\.clientAuth needs tls\.enabled"),
        (
            {"tls": {"enabled": True, "secretName": "w", "clientAuth": True}},
            r"tls\.clientAuth needs tls\.clientSecretName",
        ),
        ({**MUTUAL_SECRETS, "tls": {**MUTUAL_SECRETS["tls"], "caKey": ""}}, r"tls\.caKey"),
        ({"tls": {"enabled": True, "certManager": {"enabled": True}}}, r"issuerRef\.name"),
    ],
    ids=["no-secret", "client-auth-alone", "no-client-secret", "no-ca", "no-issuer"],
)
def test_settings_that_cannot_work_stop_the_render(
    chart: helm.Chart, values: dict[str, Any], message: str
) -> None:
    with pytest.raises(helm.HelmRenderError, match=message):
        render(chart, values)


# --- the executor pod template --------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES.values(), ids=MODES.keys())
def test_executors_get_the_ca_alone_and_reach_the_worker_over_https(
    chart: helm.Chart, mode: dict[str, Any]
) -> None:
    manifests = render(chart, {**SECRET, **mode})
    env = env_of(executor(manifests))
    assert env["DORA_USER_WORKERS"]["value"].startswith("https://")
    ca_file, volume = executor_files(manifests, "DORA_USER_TLS_CA_FILE")
    # Only the CA of the worker's Secret: the executor never sees the worker's private key.
    assert volume["secret"] == {
        "secretName": "worker-tls",
        "items": [{"key": "ca.crt", "path": "ca.crt"}],
    }
    assert ca_file.endswith("/ca.crt")
    assert not {"DORA_USER_TLS_CERT_FILE", "DORA_USER_TLS_KEY_FILE"} & env.keys()


@pytest.mark.parametrize("mode", MODES.values(), ids=MODES.keys())
def test_mutual_tls_gives_executors_the_client_pair(
    chart: helm.Chart, mode: dict[str, Any]
) -> None:
    manifests = render(chart, {**MUTUAL_SECRETS, **mode})
    for name, file in (
        ("DORA_USER_TLS_CERT_FILE", "tls.crt"),
        ("DORA_USER_TLS_KEY_FILE", "tls.key"),
    ):
        path, volume = executor_files(manifests, name)
        assert path.endswith("/" + file)
        assert volume["secret"] == {"secretName": "executor-tls"}


def test_a_publicly_trusted_certificate_needs_no_ca_file(chart: helm.Chart) -> None:
    values = {"tls": {"enabled": True, "secretName": "worker-tls", "caKey": ""}}
    manifests = render(chart, values)
    env = env_of(executor(manifests))
    assert "DORA_USER_TLS_CA_FILE" not in env  # the client's system store verifies the worker
    assert env["DORA_USER_WORKERS"]["value"].startswith("https://")


def test_notes_name_the_https_url_and_the_ca(chart: helm.Chart) -> None:
    text = notes(chart, MUTUAL_SECRETS)
    assert f"DORA_USER_WORKERS=https://{FULLNAME}.{NAMESPACE}.svc:28080" in text
    assert "CA in the Secret worker-tls\n(key ca.crt) as DORA_USER_TLS_CA_FILE" in text
    assert "the executors' is in the Secret executor-tls" in text


# --- cert-manager ---------------------------------------------------------------------------


def certificates(manifests: list[Manifest]) -> dict[str, Manifest]:
    return {m["metadata"]["name"]: m for m in manifests if m["kind"] == "Certificate"}


def test_cert_manager_certificate_names_what_executors_connect_to(chart: helm.Chart) -> None:
    manifests = render(chart, CERT_MANAGER)
    (certificate,) = certificates(manifests).values()
    validate_custom(certificate)
    spec = certificate["spec"]
    assert spec["issuerRef"] == ISSUER
    secret_volume = mounted_volume(
        pod_spec(manifests),
        worker_container(pod_spec(manifests)),
        site(manifests)["dora.worker.tls.cert.file"],
    )
    assert secret_volume["secret"]["secretName"] == spec["secretName"] == f"{FULLNAME}-tls"
    workers = env_of(executor(manifests))["DORA_USER_WORKERS"]["value"]
    host = workers.removeprefix("https://").rpartition(":")[0]
    assert host == f"{FULLNAME}.{NAMESPACE}.svc"
    assert host in spec["dnsNames"]
    assert "client auth" in spec["usages"]  # the probes present it under mutual TLS


def test_a_sidecars_certificate_names_loopback(chart: helm.Chart) -> None:
    values = {
        **CERT_MANAGER,
        "mode": "sidecar",
        "tls": {
            **CERT_MANAGER["tls"],
            "certManager": {
                **CERT_MANAGER["tls"]["certManager"],
                "dnsNames": ["spark.example"],
                "ipAddresses": ["10.0.0.9"],
            },
        },
    }
    (certificate,) = certificates(render(chart, values)).values()
    assert certificate["spec"]["dnsNames"] == ["localhost", "spark.example"]
    assert certificate["spec"]["ipAddresses"] == ["127.0.0.1", "10.0.0.9"]


def test_mutual_tls_adds_the_executors_client_certificate(chart: helm.Chart) -> None:
    manifests = render(chart, MUTUAL)
    found = certificates(manifests)
    assert set(found) == {f"{FULLNAME}-tls", f"{FULLNAME}-client-tls"}
    client = found[f"{FULLNAME}-client-tls"]
    validate_custom(client)
    assert client["spec"]["usages"] == ["client auth", "digital signature", "key encipherment"]
    _, volume = executor_files(manifests, "DORA_USER_TLS_CERT_FILE")
    assert volume["secret"]["secretName"] == client["spec"]["secretName"]


# --- monitors -----------------------------------------------------------------------------


def test_monitors_scrape_over_https_with_the_ca_and_the_client_pair(chart: helm.Chart) -> None:
    manifests = render(chart, TLS_SETS["daemonset-monitors"])
    for kind in ("ServiceMonitor", "PodMonitor"):
        monitor = one(manifests, kind, FULLNAME)
        validate_custom(monitor)
        endpoints = monitor["spec"].get("endpoints") or monitor["spec"]["podMetricsEndpoints"]
        (endpoint,) = endpoints
        assert endpoint["scheme"] == "https"
        assert endpoint["tlsConfig"] == {
            "serverName": f"{FULLNAME}.{NAMESPACE}.svc",
            "ca": {"secret": {"name": f"{FULLNAME}-tls", "key": "ca.crt"}},
            "cert": {"secret": {"name": f"{FULLNAME}-client-tls", "key": "tls.crt"}},
            "keySecret": {"name": f"{FULLNAME}-client-tls", "key": "tls.key"},
        }
    annotations = pod_spec_annotations(manifests)
    assert annotations["prometheus.io/scheme"] == "https"


def pod_spec_annotations(manifests: list[Manifest]) -> dict[str, str]:
    daemonset = one(manifests, "DaemonSet", FULLNAME)
    annotations: dict[str, str] = daemonset["spec"]["template"]["metadata"]["annotations"]
    return annotations


# --- the probe script over HTTPS ------------------------------------------------------------


class _Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200 if self.path == "/healthz" else 404)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


def self_signed(directory: Path) -> tuple[Path, Path]:
    """A self-signed certificate for ``localhost`` and its key (openssl): it serves, and as its
    own CA it is also the client certificate a mutual-TLS server trusts."""
    cert, key = directory / "tls.crt", directory / "tls.key"
    command = ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"]
    command += ["-nodes", "-days", "1", "-subj", "/CN=localhost", "-keyout", str(key), "-out"]
    subprocess.run([*command, str(cert)], check=True, capture_output=True)
    return cert, key


@pytest.fixture
def tls_worker(tmp_path: Path) -> Iterator[tuple[int, Path, Path]]:
    """A stand-in for the worker's health routes over mutual TLS, on loopback; yields its port
    and the pair (which it also trusts as client CA)."""
    cert, key = self_signed(tmp_path)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    context.load_verify_locations(cert)
    context.verify_mode = ssl.CERT_REQUIRED
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Health)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1], cert, key
    server.shutdown()
    server.server_close()


def test_the_probe_script_speaks_https_and_presents_the_pair(
    chart: helm.Chart, tls_worker: tuple[int, Path, Path], tmp_path: Path
) -> None:
    port, cert, key = tls_worker
    manifests = render(chart, {**MUTUAL_SECRETS, "mode": "sidecar"})
    script = tmp_path / "probe.py"
    script.write_text(one(manifests, "ConfigMap", f"{FULLNAME}-config")["data"]["probe.py"])
    command = worker_container(pod_spec(manifests))["livenessProbe"]["exec"]["command"]
    # The rendered arguments, with the pair where this test keeps it.
    args = [str(port), *command[3:5], str(cert), str(key)]

    def probe(*arguments: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, str(script), *arguments],
            env={"PATH": "/usr/bin:/bin"},
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
        )

    assert probe(*args).returncode == 0
    refused = probe(*args[:3])  # no client certificate: the worker ends the handshake
    assert refused.returncode == 1
    assert "/healthz" in refused.stderr
    assert probe(str(port), "/healthz").returncode == 1  # plain HTTP to a TLS port
