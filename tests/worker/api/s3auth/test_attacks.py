"""Requests S3 refuses, refused with S3's code and status: forged, foreign, expired, replayed and
skewed signatures, altered requests, wrong payload hashes and digests, unsigned additions."""

from __future__ import annotations

import base64
import hashlib
import time
from collections.abc import Callable
from dataclasses import replace

import pytest

from tests.worker.api.s3auth.captured import Sent, capture, client, presigned, verifier
from worker.api.s3auth import S3AuthError, Verifier

PAYLOAD = b"the payload " * 100_000


def _refused(run: Callable[[], object]) -> tuple[str, int]:
    with pytest.raises(S3AuthError) as refused:
        run()
    return refused.value.code, refused.value.status


def _other_second(timestamp: str) -> str:
    """The same day and minute, another second: the scope still holds, the signature not."""
    return timestamp[:-2] + ("1" if timestamp[-2] != "1" else "2") + "Z"


def _get() -> Sent:
    return capture(lambda: client().get_object(Bucket="b", Key="k"))


def _put(endpoint: str = "https://s3.dora.test:9443", **params: object) -> Sent:
    return capture(lambda: client(endpoint).put_object(Bucket="b", Key="k", Body=PAYLOAD, **params))


def test_forged_signature() -> None:
    sent = _get()
    authorization = sent.headers["authorization"]
    last = authorization[-1]
    forged = sent.with_headers(authorization=authorization[:-1] + ("0" if last != "0" else "1"))
    assert _refused(lambda: forged.verify(verifier())) == ("SignatureDoesNotMatch", 403)


def test_signature_of_another_secret_under_a_known_key_id() -> None:
    sent = capture(lambda: client(secret="not the secret").get_object(Bucket="b", Key="k"))
    assert _refused(lambda: sent.verify(verifier())) == ("SignatureDoesNotMatch", 403)


def test_unknown_access_key_id() -> None:
    sent = capture(lambda: client(key_id="AKIDUNKNOWN").get_object(Bucket="b", Key="k"))
    assert _refused(lambda: sent.verify(verifier())) == ("InvalidAccessKeyId", 403)


@pytest.mark.parametrize(
    "alter",
    [
        lambda s: replace(s, path="/b/other"),
        lambda s: replace(s, path="/b/k/"),
        lambda s: replace(s, method="DELETE"),
        lambda s: replace(s, query="versionId=1"),
        lambda s: s.with_headers(host="evil.test:9443"),
        lambda s: s.with_headers(x_amz_date=_other_second(s.headers["x-amz-date"])),
        lambda s: s.with_headers(x_amz_content_sha256="UNSIGNED-PAYLOAD"),
    ],
)
def test_a_request_altered_after_signing(alter: Callable[[Sent], Sent]) -> None:
    sent = alter(_get())
    code, status = _refused(lambda: sent.verify(verifier()))
    assert status == 403
    assert code in ("SignatureDoesNotMatch", "RequestTimeTooSkewed")


def test_unsigned_x_amz_headers_added_to_a_signed_request() -> None:
    sent = _get().with_headers(x_amz_meta_owner="mallory")
    assert _refused(lambda: sent.verify(verifier())) == ("AccessDenied", 403)
    copy = _put().with_headers(x_amz_copy_source="/b/secret")
    assert _refused(lambda: copy.verify(verifier())) == ("AccessDenied", 403)


@pytest.mark.parametrize("skew", [-16 * 60, 16 * 60, 3600 * 24])
def test_clock_skew_over_15_minutes(skew: float) -> None:
    sent = _get()
    skewed = verifier(clock=lambda: time.time() + skew)
    assert _refused(lambda: sent.verify(skewed)) == ("RequestTimeTooSkewed", 403)


def test_clock_skew_under_15_minutes_is_accepted() -> None:
    sent = _get()
    sent.verify(verifier(clock=lambda: time.time() + 14 * 60))
    sent.verify(verifier(clock=lambda: time.time() - 14 * 60))


def test_a_replay_within_the_window_of_a_changed_body_and_after_the_window() -> None:
    sent = _put("http://127.0.0.1:9000")
    replayed = replace(sent, body=b"X" + sent.body[1:])
    assert _refused(lambda: replayed.through(verifier())) == ("XAmzContentSHA256Mismatch", 400)
    later = verifier(clock=lambda: time.time() + 20 * 60)
    assert _refused(lambda: sent.through(later)) == ("RequestTimeTooSkewed", 403)


def test_expired_and_not_yet_valid_presigned_urls() -> None:
    s3 = client(signature_version="s3v4")
    url = s3.generate_presigned_url("get_object", Params={"Bucket": "b", "Key": "k"}, ExpiresIn=60)
    sent = presigned(url)
    sent.verify(verifier(clock=lambda: time.time() + 50))
    with pytest.raises(S3AuthError) as refused:
        sent.verify(verifier(clock=lambda: time.time() + 120))
    assert (refused.value.code, refused.value.status) == ("AccessDenied", 403)
    assert refused.value.message == "Request has expired"
    early = verifier(clock=lambda: time.time() - 3600)
    assert _refused(lambda: sent.verify(early)) == ("AccessDenied", 403)


def test_presigned_url_for_longer_than_a_week() -> None:
    s3 = client(signature_version="s3v4")
    url = s3.generate_presigned_url(
        "get_object", Params={"Bucket": "b", "Key": "k"}, ExpiresIn=604801
    )
    code, status = _refused(lambda: presigned(url).verify(verifier()))
    assert (code, status) == ("AuthorizationQueryParametersError", 400)


def test_presigned_url_used_for_another_key_or_method() -> None:
    s3 = client(signature_version="s3v4")
    url = s3.generate_presigned_url("get_object", Params={"Bucket": "b", "Key": "k"})
    other = replace(presigned(url), path="/b/k2")
    assert _refused(lambda: other.verify(verifier())) == ("SignatureDoesNotMatch", 403)
    put = replace(presigned(url), method="PUT")
    assert _refused(lambda: put.verify(verifier())) == ("SignatureDoesNotMatch", 403)


def test_both_header_and_query_authentication() -> None:
    s3 = client(signature_version="s3v4")
    url = s3.generate_presigned_url("get_object", Params={"Bucket": "b", "Key": "k"})
    both = presigned(url).with_headers(authorization=_get().headers["authorization"])
    assert _refused(lambda: both.verify(verifier())) == ("InvalidArgument", 400)


def test_anonymous_only_when_allowed() -> None:
    anonymous = Sent("GET", "/b/k", "", {"host": "h"}, "h")
    assert _refused(lambda: anonymous.verify(verifier())) == ("AccessDenied", 403)
    assert anonymous.verify(verifier(anonymous=True)).principal.access_key_id is None
    no_keys = Verifier([], allow_anonymous=False)
    assert _refused(lambda: anonymous.verify(no_keys)) == ("AccessDenied", 403)


def test_an_anonymous_body_is_still_held_to_its_digests() -> None:
    md5 = base64.b64encode(hashlib.md5(b"other").digest()).decode()
    sent = Sent("PUT", "/b/k", "", {"host": "h", "content-md5": md5}, "h", PAYLOAD)
    assert _refused(lambda: sent.through(verifier(anonymous=True))) == ("BadDigest", 400)


@pytest.mark.parametrize(
    "authorization",
    [
        "AWS4-HMAC-SHA256 Credential=AKIDDORATEST0000001/20261129/us-east-1/s3/aws4_request",
        "AWS4-HMAC-SHA256 Credential=AKID/2026/us-east-1/s3, SignedHeaders=host, Signature="
        + "0" * 64,
        "AWS4-HMAC-SHA256 Credential=AKIDDORATEST0000001/19990101/us-east-1/s3/aws4_request, "
        "SignedHeaders=host;x-amz-date, Signature=" + "0" * 64,
        "AWS4-HMAC-SHA256 Credential=AKIDDORATEST0000001/{date}/us-east-1/ec2/aws4_request, "
        "SignedHeaders=host;x-amz-date, Signature=" + "0" * 64,
        "AWS4-HMAC-SHA256 Credential=AKIDDORATEST0000001/{date}/us-east-1/s3/aws4_request, "
        "SignedHeaders=x-amz-date, Signature=" + "0" * 64,
    ],
)
def test_malformed_authorization_headers(authorization: str) -> None:
    sent = _get()
    value = authorization.format(date=sent.headers["x-amz-date"][:8])
    code, status = _refused(lambda: sent.with_headers(authorization=value).verify(verifier()))
    assert (code, status) == ("AuthorizationHeaderMalformed", 400)


def test_signature_version_2_and_unknown_payload_modes() -> None:
    v2 = _get().with_headers(authorization="AWS AKIDDORATEST0000001:c2lnbmF0dXJl")
    assert _refused(lambda: v2.verify(verifier())) == ("InvalidRequest", 400)
    missing = _get().with_headers(x_amz_content_sha256=None)
    assert _refused(lambda: missing.verify(verifier())) == ("InvalidRequest", 400)


def test_wrong_payload_hash() -> None:
    sent = _put("http://127.0.0.1:9000")
    assert len(sent.headers["x-amz-content-sha256"]) == 64
    tampered = replace(sent, body=sent.body[:-1] + b"!")
    assert _refused(lambda: tampered.through(verifier())) == ("XAmzContentSHA256Mismatch", 400)


def _wrong(digest_size: int) -> str:
    return base64.b64encode(b"\x01" * digest_size).decode()


SIZES = {"crc32": 4, "crc32c": 4, "crc64nvme": 8, "sha1": 20, "sha256": 32}


@pytest.mark.parametrize("algorithm", list(SIZES))
def test_wrong_checksum_in_a_trailer(algorithm: str) -> None:
    sent = _put(ChecksumAlgorithm=algorithm.upper())
    name = f"x-amz-checksum-{algorithm}".encode()
    head, _, tail = sent.body.rpartition(name + b":")
    value, _, rest = tail.partition(b"\r\n")
    forged = replace(
        sent, body=head + name + b":" + _wrong(SIZES[algorithm]).encode() + b"\r\n" + rest
    )
    assert _refused(lambda: forged.through(verifier())) == ("BadDigest", 400)
    assert value != _wrong(SIZES[algorithm]).encode()


@pytest.mark.parametrize("algorithm", list(SIZES))
def test_wrong_checksum_in_a_header(algorithm: str) -> None:
    header = f"x-amz-checksum-{algorithm}"
    sent = _put("http://127.0.0.1:9000", ChecksumAlgorithm=algorithm.upper())
    assert header in sent.headers
    # A payload signed over HTTP, whose checksum header is then changed: the signature
    # catches it. The same checksum unsigned (a presigned PUT) is caught by the digest.
    forged = sent.with_headers(**{header.replace("-", "_"): _wrong(SIZES[algorithm])})
    assert _refused(lambda: forged.verify(verifier())) == ("SignatureDoesNotMatch", 403)
    url = client(signature_version="s3v4").generate_presigned_url(
        "put_object", Params={"Bucket": "b", "Key": "k"}
    )
    unsigned = presigned(url, "PUT", PAYLOAD).with_headers(
        **{header.replace("-", "_"): _wrong(SIZES[algorithm])}
    )
    assert _refused(lambda: unsigned.through(verifier())) == ("BadDigest", 400)


def test_wrong_and_malformed_content_md5() -> None:
    wrong = base64.b64encode(hashlib.md5(b"something else").digest()).decode()
    sent = _put(ContentMD5=wrong)
    assert _refused(lambda: sent.through(verifier())) == ("BadDigest", 400)
    malformed = _put(ContentMD5="not base64 of 16 bytes")
    assert _refused(lambda: malformed.verify(verifier())) == ("InvalidDigest", 400)


def test_malformed_checksum_header_and_two_checksums() -> None:
    url = client(signature_version="s3v4").generate_presigned_url(
        "put_object", Params={"Bucket": "b", "Key": "k"}
    )
    sent = presigned(url, "PUT", PAYLOAD)
    bad = sent.with_headers(x_amz_checksum_crc32="AAAA")
    assert _refused(lambda: bad.verify(verifier())) == ("InvalidRequest", 400)
    two = sent.with_headers(x_amz_checksum_crc32="AAAAAA==", x_amz_checksum_sha1=_wrong(20))
    assert _refused(lambda: two.verify(verifier())) == ("InvalidRequest", 400)


def test_trailer_other_than_declared() -> None:
    sent = _put(ChecksumAlgorithm="CRC32C")
    undeclared = sent.with_headers(x_amz_trailer="x-amz-checksum-sha256")
    # x-amz-trailer is signed by boto3, so the change fails the signature...
    assert _refused(lambda: undeclared.verify(verifier())) == ("SignatureDoesNotMatch", 403)
    # ...and a body whose trailer is not the declared one fails at its end.
    renamed = replace(
        sent, body=sent.body.replace(b"x-amz-checksum-crc32c:", b"x-amz-checksum-crc32:")
    )
    assert _refused(lambda: renamed.through(verifier())) == ("InvalidRequest", 400)


def test_decoded_length_other_than_declared() -> None:
    sent = _put()
    short = sent.with_headers(x_amz_decoded_content_length=str(len(PAYLOAD) + 1))
    assert _refused(lambda: short.through(verifier())) == ("SignatureDoesNotMatch", 403)


def test_content_md5_of_a_complete_multipart_upload_is_still_the_body_s() -> None:
    sent = capture(
        lambda: client().complete_multipart_upload(
            Bucket="b",
            Key="k",
            UploadId="u1",
            MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": '"e"'}]},
        )
    )
    wrong = base64.b64encode(hashlib.md5(b"other").digest()).decode()
    url = client(signature_version="s3v4").generate_presigned_url(
        "complete_multipart_upload", Params={"Bucket": "b", "Key": "k", "UploadId": "u1"}
    )
    forged = presigned(url, "POST", sent.body).with_headers(content_md5=wrong)
    assert _refused(lambda: forged.through(verifier())) == ("BadDigest", 400)


def test_half_a_presigned_url_and_an_empty_authorization_header() -> None:
    half = Sent("GET", "/b/k", "X-Amz-Algorithm=AWS4-HMAC-SHA256", {"host": "h"}, "h")
    code, status = _refused(lambda: half.verify(verifier(anonymous=True)))
    assert (code, status) == ("AuthorizationQueryParametersError", 400)
    empty = Sent("GET", "/b/k", "", {"host": "h", "authorization": ""}, "h")
    assert _refused(lambda: empty.verify(verifier(anonymous=True))) == ("InvalidRequest", 400)


def _presigned_with_hash(payload_hash: str) -> Sent:
    """A presigned PUT whose query signs ``X-Amz-Content-Sha256`` (as the JS SDK v3 presigner
    hoists it), signed with the SigV4 primitives."""
    from tests.worker.api.s3auth.captured import KEY_ID, SECRET
    from worker.api.s3auth import sigv4

    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    scope = f"{stamp[:8]}/us-east-1/s3/aws4_request"
    pairs = [
        ("X-Amz-Algorithm", "AWS4-HMAC-SHA256"),
        ("X-Amz-Content-Sha256", payload_hash),
        ("X-Amz-Credential", f"{KEY_ID}%2F{scope.replace('/', '%2F')}"),
        ("X-Amz-Date", stamp),
        ("X-Amz-Expires", "300"),
        ("X-Amz-SignedHeaders", "host"),
    ]
    canonical = sigv4.canonical_request(
        "PUT", "/b/k", sigv4.canonical_query(pairs), [("host", "h:1")], payload_hash
    )
    key = sigv4.signing_key(SECRET, stamp[:8], "us-east-1", "s3")
    signature = sigv4.sign(key, sigv4.string_to_sign(stamp, scope, canonical))
    query = "&".join(f"{n}={v}" for n, v in pairs) + f"&X-Amz-Signature={signature}"
    return Sent("PUT", "/b/k", query, {"host": "h:1"}, "h:1", PAYLOAD)


def test_a_payload_hash_signed_in_a_presigned_url_is_held_to() -> None:
    assert _presigned_with_hash("UNSIGNED-PAYLOAD").through(verifier()) == PAYLOAD
    good = hashlib.sha256(PAYLOAD).hexdigest()
    assert _presigned_with_hash(good).through(verifier()) == PAYLOAD
    bad = hashlib.sha256(b"other").hexdigest()
    code = _refused(lambda: _presigned_with_hash(bad).through(verifier()))
    assert code == ("XAmzContentSHA256Mismatch", 400)


def test_credentials_never_show_their_secret() -> None:
    from worker.api.s3auth import AccessKey

    shown = repr(AccessKey("AKID", "the-secret")) + str([AccessKey("AKID", "the-secret")])
    assert "the-secret" not in shown
    assert "AKID" in shown
