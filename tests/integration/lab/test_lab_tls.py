"""The lab over TLS (issues 24 and 25): each worker serves HTTPS only, with a certificate for its
host's address, and requires client certificates; etcd takes TLS clients only; every client on
a lab host verifies workers and etcd with the lab's CA file and sends a token, which never
crosses a link in clear. Every read is compared with the bytes S3 holds."""

import hashlib
from collections.abc import Iterator

import httpx
import pytest

from tests.integration.lab.lab_support import (
    lab_fixture,
    members,
    owners_seen_from,
    put_files,
    read_across_hosts,
    read_op,
)
from tests.worker.tls.certs import CA
from worker.devlab.lab.lab import DORA, Lab

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(scope="module")
def tls_lab(tmp_path_factory: pytest.TempPathFactory, tls_ca: CA) -> Iterator[Lab]:
    yield from lab_fixture(tmp_path_factory, tls_ca)


@pytest.fixture(scope="module")
def files(tls_lab: Lab) -> dict[str, str]:
    return put_files(tls_lab, "tls", 6)


def without(defines: list[str], *keys: str) -> list[str]:
    return [d for d in defines if d.split("=", 1)[0] not in keys]


def test_cluster_ls_lists_https_workers_at_their_host_addresses(tls_lab: Lab) -> None:
    assert tls_lab.etcd is not None and tls_lab.etcd.endpoint.startswith("https://")
    listed = {str(w["url"]): w["online"] for w in members(tls_lab, "w2")}
    subnet = tls_lab.network.subnet
    assert listed == {f"https://10.203.{subnet}.{octet}:28080": True for octet in (11, 12, 13)}
    # etcd takes no client without a certificate it trusts.
    pair = ("dora.cluster.etcd.tls.cert.file", "dora.cluster.etcd.tls.key.file")
    uncertified = without(tls_lab.client_defines(), *pair)
    done = tls_lab.run("w2", [DORA, "cluster", "ls", *(f"-D{d}" for d in uncertified)])
    assert done.returncode != 0
    assert tls_lab.etcd.endpoint in done.stderr and "Traceback" not in done.stderr


def test_a_read_from_one_host_is_served_over_https_by_the_owner_on_another(
    tls_lab: Lab, files: dict[str, str]
) -> None:
    read_across_hosts(tls_lab, "w1", files)
    assert tls_lab.tls is not None
    without_token = httpx.Client(verify=tls_lab.tls.trusted.context(), timeout=5)
    for worker in tls_lab.workers:
        # It speaks nothing but TLS: a plain HTTP request is never answered.
        with pytest.raises(httpx.TransportError):
            httpx.get(f"http://{worker.address}/healthz", timeout=5)
        # Over TLS, with the client's certificate, no call is taken without the token.
        refused = without_token.get(f"{worker.url}/v1/status", params={"path": next(iter(files))})
        assert refused.status_code == 401
    without_token.close()


def test_webhdfs_open_through_any_worker_goes_on_to_the_owner_over_https(
    tls_lab: Lab, files: dict[str, str]
) -> None:
    assert tls_lab.tls is not None
    owners = owners_seen_from(tls_lab, "w1", list(files))
    asked = tls_lab.worker("w1")
    uri, owner = next((u, o) for u, o in owners.items() if o != asked.address)
    # The token as Hadoop's delegation parameter: it travels on in the Location, over https.
    opened = asked.http.get(
        "/webhdfs/v1/" + uri.replace("s3://", "s3/"),
        params={"op": "OPEN", "delegation": tls_lab.tls.token},
        follow_redirects=True,
    )
    assert opened.status_code == 200
    [redirect] = opened.history
    assert redirect.headers["Location"].startswith(f"https://{owner}/webhdfs/v1/")
    assert hashlib.sha256(opened.content).hexdigest() == files[uri]


def test_a_client_on_a_lab_host_will_not_send_its_token_over_plain_http(
    tls_lab: Lab, files: dict[str, str]
) -> None:
    uri = next(iter(files))
    target = tls_lab.worker("w2")
    plain = without(tls_lab.client_defines(), "dora.cluster.etcd.endpoints", "dora.user.workers")
    [answer] = tls_lab.probe(
        "w1", read_op(uri), defines=[*plain, f"dora.user.workers=http://{target.address}"]
    )
    error = str(answer["error"])
    assert error.startswith("PlaintextRefused")
    assert target.address in error and "dora.user.client.token.allow.plaintext" in error


def test_a_worker_refuses_a_client_without_a_certificate_it_trusts(
    tls_lab: Lab, files: dict[str, str]
) -> None:
    uri = next(iter(files))
    uncertified = without(
        tls_lab.client_defines(), "dora.user.tls.cert.file", "dora.user.tls.key.file"
    )
    owner = owners_seen_from(tls_lab, "w3", [uri])[uri]
    [refused] = tls_lab.probe("w3", read_op(uri), defines=uncertified)
    assert "sha256" not in refused  # no worker served it, and there is no fallback to S3
    error = str(refused["error"])
    assert owner in error and "certificate" in error
    # Refused handshakes and plain HTTP requests are no errors of the worker's own.
    for worker in tls_lab.workers:
        assert "Traceback" not in worker.log.read_text()
