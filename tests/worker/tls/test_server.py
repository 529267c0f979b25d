"""The worker's TLS settings: which keys must come together, files that cannot be used, the
reload of a replaced pair (and the old pair kept when the new one does not load), and the
warning for a token that would travel in clear."""

import logging
from pathlib import Path

import pytest

from config import Config, ConfigError, load_config
from tests.worker.tls.certs import CA
from worker.keys import build_registry
from worker.tls.server import ServerTls, plaintext_warning


def config(*defines: str) -> Config:
    return load_config(build_registry(), environ={}, defines=list(defines))


def tls(cert: Path, key: Path, *more: str) -> ServerTls | None:
    return ServerTls.from_config(
        config(f"dora.worker.tls.cert.file={cert}", f"dora.worker.tls.key.file={key}", *more)
    )


def test_no_keys_no_tls_and_half_a_pair_is_refused(tmp_path: Path) -> None:
    assert ServerTls.from_config(config()) is None
    with pytest.raises(ConfigError, match="dora.worker.tls.key.file must be set as well"):
        ServerTls.from_config(config(f"dora.worker.tls.cert.file={tmp_path}/c.pem"))
    with pytest.raises(ConfigError, match="mutual TLS needs dora.worker.tls.cert.file"):
        ServerTls.from_config(config(f"dora.worker.tls.client.ca.file={tmp_path}/ca.pem"))


def test_unusable_files_name_the_key(tmp_path: Path) -> None:
    ca = CA(tmp_path)
    pair = ca.issue("server")
    with pytest.raises(ConfigError, match=r"dora.worker.tls.cert.file=.*nope.pem: cannot use"):
        tls(tmp_path / "nope.pem", pair.key)
    with pytest.raises(ConfigError, match="dora.worker.tls.cert.file=.*KEY_VALUES_MISMATCH"):
        tls(pair.cert, ca.issue("other").key)
    with pytest.raises(ConfigError, match="client.ca.file=.*missing.pem: cannot use"):
        tls(pair.cert, pair.key, f"dora.worker.tls.client.ca.file={tmp_path}/missing.pem")
    served = tls(pair.cert, pair.key, f"dora.worker.tls.client.ca.file={ca.file}")
    assert served is not None
    assert served.context.verify_mode.name == "CERT_REQUIRED"


def test_a_replaced_pair_is_loaded_and_a_broken_one_kept_out(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ca = CA(tmp_path)
    live = ca.issue("live")
    served = tls(live.cert, live.key)
    assert served is not None
    assert not served.reload()  # nothing changed
    fresh = ca.issue("fresh")
    live.cert.write_bytes(fresh.cert.read_bytes())
    live.key.write_bytes(fresh.key.read_bytes())
    assert served.reload()
    live.key.write_bytes(ca.issue("stray").key.read_bytes())  # a key of another certificate
    with caplog.at_level(logging.WARNING, logger="worker.tls.server"):
        assert not served.reload()
        assert not served.reload()  # the same broken files are reported once
    assert [r.getMessage() for r in caplog.records if "keeping" in r.getMessage()] == [
        f"worker TLS: keeping the certificate in use: the replaced {live.cert} / {live.key} "
        "does not load (KEY_VALUES_MISMATCH)"
    ]


@pytest.mark.parametrize(
    ("host", "defines", "warns"),
    [
        ("0.0.0.0", ["dora.worker.security.token=t"], True),
        ("10.1.2.3", ["dora.worker.security.token=t"], True),
        ("127.0.0.1", ["dora.worker.security.token=t"], False),
        ("0.0.0.0", [], False),
        ("0.0.0.0", ["dora.worker.security.token=t",
                     "dora.worker.security.token.allow.plaintext=true"], False),
    ],
)  # fmt: skip
def test_a_token_in_clear_beyond_loopback_is_warned_about(
    host: str, defines: list[str], warns: bool
) -> None:
    warning = plaintext_warning(config(*defines), host, "dora.worker.security.token")
    assert (warning is not None) is warns
    if warning:
        assert "dora.worker.security.token.allow.plaintext=true" in warning
        assert f"listens on {host} without TLS" in warning
