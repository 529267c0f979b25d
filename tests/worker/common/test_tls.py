"""The client's TLS options and the rule that a token never travels in clear beyond loopback."""

import json
from pathlib import Path

import pytest

from config import Config, ConfigError, load_config
from tests.worker.tls.certs import CA
from worker.client.http import Call, WorkerClient
from worker.client.options import ClientOptions
from worker.cluster.layout import WorkerInfo
from worker.common.tls import PlaintextRefused, is_loopback, refuse_plaintext
from worker.keys import build_registry


def config(*defines: str) -> Config:
    return load_config(build_registry(), environ={}, defines=list(defines))


def test_worker_urls_keep_their_scheme_and_ring_names_do_not() -> None:
    options = ClientOptions.resolve(config(), workers="https://h1:443, h2:28080")
    assert options.workers == ("https://h1:443", "http://h2:28080")
    assert options.ring_names == ("h1:443", "h2:28080")
    with pytest.raises(ValueError, match="not an http"):
        ClientOptions.resolve(config(), workers="https://h1:443/path")


def test_unusable_files_are_refused_naming_the_key_or_option(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"dora.user.tls.ca.file=.*nope.pem"):
        ClientOptions.resolve(config(f"dora.user.tls.ca.file={tmp_path}/nope.pem"))
    (tmp_path / "junk.pem").write_text("junk")
    with pytest.raises(ConfigError, match="not a PEM CA bundle"):
        ClientOptions.resolve(config(f"dora.user.tls.ca.file={tmp_path / 'junk.pem'}"))
    pair = CA(tmp_path / "ca").issue("c", client=True)
    with pytest.raises(ConfigError, match="dora.user.tls.cert.file is set but dora.user.tls.key"):
        ClientOptions.resolve(config(f"dora.user.tls.cert.file={pair.cert}"))
    with pytest.raises(ConfigError, match="cannot load the client certificate"):
        ClientOptions.resolve(
            config(f"dora.user.tls.cert.file={pair.cert}", f"dora.user.tls.key.file={pair.cert}")
        )
    with pytest.raises(ConfigError, match="dora.cluster.etcd.tls.ca.file"):
        ClientOptions.resolve(config(f"dora.cluster.etcd.tls.ca.file={tmp_path}/junk.pem"))


@pytest.mark.parametrize(
    ("host", "local"),
    [("127.0.0.1", True), ("127.8.0.1", True), ("::1", True), ("[::1]", True),
     ("localhost", True), ("10.0.0.5", False), ("worker-1.example", False), ("", False)],
)  # fmt: skip
def test_loopback_is_told_apart(host: str, local: bool) -> None:
    assert is_loopback(host) is local


def test_a_token_is_not_sent_in_clear_beyond_loopback() -> None:
    refuse_plaintext("http://127.0.0.1:1/v1/status", "127.0.0.1:1", allowed=False)
    refuse_plaintext("https://10.0.0.5:1/v1/status", "10.0.0.5:1", allowed=False)
    refuse_plaintext("http://10.0.0.5:1/v1/status", "10.0.0.5:1", allowed=True)
    with pytest.raises(PlaintextRefused, match="dora.user.client.token.allow.plaintext=true"):
        refuse_plaintext("http://10.0.0.5:1/v1/status", "10.0.0.5:1", allowed=False)


def status(*defines: str, workers: str) -> None:
    """A status call from a client with ``defines`` that connects for 200 ms at most."""
    limits = ("dora.user.client.connect.timeout=200ms", "dora.user.client.fallback.to.ufs=false")
    options = ClientOptions.resolve(config(*defines, *limits), workers=workers)
    WorkerClient(options).send(Call("GET", "/v1/status", "s3://b/k", "status s3://b/k"))


def test_the_client_refuses_before_connecting_and_names_the_key() -> None:
    token = "dora.user.client.token=t"
    # The refusal comes before any connection is tried: no packet leaves for 192.0.2.1
    # (TEST-NET-1). What the allowance and a token-less client do is checked above, without
    # sending anything beyond loopback.
    with pytest.raises(PlaintextRefused, match="worker 192.0.2.1:9: not sending the token"):
        status(token, workers="192.0.2.1:9")


def test_a_member_entry_carries_its_scheme() -> None:
    info = WorkerInfo("w1", 28080, 1, 2, "https")
    assert WorkerInfo.decode(info.encode()).url == "https://w1:28080"
    older = json.loads(info.encode())
    del older["Dora"]["Scheme"]  # an entry of a worker from before TLS
    assert WorkerInfo.decode(json.dumps(older).encode()).url == "http://w1:28080"
    older["Dora"]["Scheme"] = "ftp"
    with pytest.raises(ValueError, match="expected http or https, got 'ftp'"):
        WorkerInfo.decode(json.dumps(older).encode())
