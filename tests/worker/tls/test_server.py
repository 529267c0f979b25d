"""The worker's TLS settings: which keys must come together, files that cannot be used, the
reload of a replaced pair or client CA (and the old ones kept when the new do not load), checked
by real handshakes in memory, and the warning for a token that would travel in clear."""

import contextlib
import logging
import ssl
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
    # Asked for, not required: a client without one is answered 401 by the HTTP layer.
    assert served.context.verify_mode.name == "CERT_OPTIONAL"
    assert served.context.num_tickets == 0  # no resumption past a rotated client CA


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
        "worker TLS: keeping the certificate and client CA in use: the replaced "
        f"dora.worker.tls.cert.file={live.cert} does not load (KEY_VALUES_MISMATCH)"
    ]


def client_context(trust: CA, client: CA | None = None) -> ssl.SSLContext:
    """A client's context trusting ``trust``, presenting a certificate ``client`` signed."""
    context = ssl.create_default_context(cafile=str(trust.file))
    if client is not None:
        pair = client.issue("client", ("client",), client=True)
        context.load_cert_chain(pair.cert, pair.key)
    return context


def connect(
    server: ssl.SSLContext, context: ssl.SSLContext, session: ssl.SSLSession | None = None
) -> tuple[str, ssl.SSLObject]:
    """A TLS handshake between ``server`` and a client with ``context`` (resuming ``session``
    if given), through memory: "ok" or the server's reason to refuse, and the client's end."""
    wires = [(ssl.MemoryBIO(), ssl.MemoryBIO()) for _ in range(2)]
    ends = [
        server.wrap_bio(*wires[0], server_side=True),
        context.wrap_bio(*wires[1], server_hostname="localhost", session=session),
    ]
    done = [False, False]
    for _ in range(10):
        for side, end in enumerate(ends):
            if not done[side]:
                try:
                    end.do_handshake()
                    done[side] = True
                except ssl.SSLWantReadError:
                    pass
                except ssl.SSLError as exc:
                    return str(exc.reason) if side == 0 else f"client: {exc.reason}", ends[1]
            # What this end wrote is what the other end reads.
            wires[1 - side][0].write(wires[side][1].read())
        if all(done):
            with contextlib.suppress(ssl.SSLWantReadError):
                ends[1].read()  # takes in the session tickets the server sent, if any
            return "ok", ends[1]
    return "stalled", ends[1]


def handshake(server: ssl.SSLContext, trust: CA, client: CA | None = None) -> str:
    """:func:`connect`'s outcome for a new client trusting ``trust`` (presenting a certificate
    ``client`` signed)."""
    return connect(server, client_context(trust, client))[0]


def rotate(bundle: Path, ca: CA) -> None:
    """Replace ``bundle`` by ``ca``'s certificate, as a Secret volume does: by rename."""
    bundle.with_suffix(".new").write_bytes(ca.file.read_bytes())
    bundle.with_suffix(".new").replace(bundle)


def mutual(tmp_path: Path) -> tuple[ServerTls, tuple[CA, CA, CA], Path]:
    """A worker's TLS requiring client certificates, its CA, the client CA in its bundle (old)
    and another (new), and the bundle's path."""
    ca, old, new = CA(tmp_path / "ca"), CA(tmp_path / "old", "old"), CA(tmp_path / "new", "new")
    pair = ca.issue("server")
    bundle = tmp_path / "clients.pem"
    bundle.write_bytes(old.file.read_bytes())
    served = tls(pair.cert, pair.key, f"dora.worker.tls.client.ca.file={bundle}")
    assert served is not None
    return served, (ca, old, new), bundle


def test_a_replaced_client_ca_decides_new_handshakes(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    served, (ca, old, new), bundle = mutual(tmp_path)
    assert handshake(served.context, ca, old) == "ok"
    assert handshake(served.context, ca, new) == "CERTIFICATE_VERIFY_FAILED"
    assert handshake(served.context, ca) == "ok"  # none presented: the HTTP layer refuses
    rotate(bundle, new)
    assert served.reload()
    assert handshake(served.context, ca, new) == "ok"
    assert handshake(served.context, ca, old) == "CERTIFICATE_VERIFY_FAILED"
    bundle.write_text("not a certificate")
    with caplog.at_level(logging.WARNING, logger="worker.tls.server"):
        assert not served.reload()
    assert f"the replaced dora.worker.tls.client.ca.file={bundle} does not load" in caplog.text
    assert handshake(served.context, ca, new) == "ok"  # the last CA that loaded stays
    assert handshake(served.context, ca, old) == "CERTIFICATE_VERIFY_FAILED"


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


def test_a_session_under_a_removed_client_ca_is_not_resumed(tmp_path: Path) -> None:
    served, (ca, old, new), bundle = mutual(tmp_path)
    context = client_context(ca, old)
    outcome, first = connect(served.context, context)
    assert outcome == "ok"
    rotate(bundle, new)
    assert served.reload()
    # A ticket from the first session would resume it without a certificate check.
    assert connect(served.context, context, first.session)[0] == "CERTIFICATE_VERIFY_FAILED"
