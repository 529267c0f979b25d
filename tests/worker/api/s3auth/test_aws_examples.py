"""The worked examples of AWS's S3 SigV4 documentation ("Signature Calculations for the
Authorization Header", "Query String Authentication", "Transferring Payload in Multiple
Chunks"), and cases of AWS's generic SigV4 test suite: their credentials, requests and
signatures, verified. The facts are AWS's; the requests are written out here."""

from __future__ import annotations

import calendar

import pytest

from worker.api.s3auth import AccessKey, S3AuthError, Verifier, sigv4

KEY_ID = "AKIAIOSFODNN7EXAMPLE"
SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
SCOPE = f"{KEY_ID}/20130524/us-east-1/s3/aws4_request"
WHEN = calendar.timegm((2013, 5, 24, 0, 5, 0))
EMPTY = sigv4.EMPTY_SHA256


def _verifier(now: float = WHEN) -> Verifier:
    return Verifier([AccessKey(KEY_ID, SECRET)], allow_anonymous=False, clock=lambda: now)


def _auth(signed: str, signature: str) -> str:
    return f"AWS4-HMAC-SHA256 Credential={SCOPE},SignedHeaders={signed},Signature={signature}"


def test_signing_key_and_string_to_sign_of_the_get_object_example() -> None:
    canonical = sigv4.canonical_request(
        "GET",
        "/test.txt",
        "",
        [
            ("host", "examplebucket.s3.amazonaws.com"),
            ("range", "bytes=0-9"),
            ("x-amz-content-sha256", EMPTY),
            ("x-amz-date", "20130524T000000Z"),
        ],
        EMPTY,
    )
    text = sigv4.string_to_sign("20130524T000000Z", "20130524/us-east-1/s3/aws4_request", canonical)
    assert text.endswith("7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972")
    key = sigv4.signing_key(SECRET, "20130524", "us-east-1", "s3")
    assert sigv4.sign(key, text) == (
        "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
    )


def test_get_object_with_a_range() -> None:
    headers = {
        "host": "examplebucket.s3.amazonaws.com",
        "range": "bytes=0-9",
        "x-amz-content-sha256": EMPTY,
        "x-amz-date": "20130524T000000Z",
        "authorization": _auth(
            "host;range;x-amz-content-sha256;x-amz-date",
            "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41",
        ),
    }
    verified = _verifier().verify("GET", "/test.txt", "", headers, "examplebucket.s3.amazonaws.com")
    assert verified.principal.access_key_id == KEY_ID
    verified.body.finish()


def test_put_object_with_a_dollar_in_the_key_and_a_date_header() -> None:
    payload = b"Welcome to Amazon S3."
    headers = {
        "host": "examplebucket.s3.amazonaws.com",
        "date": "Fri, 24 May 2013 00:00:00 GMT",
        "x-amz-date": "20130524T000000Z",
        "x-amz-storage-class": "REDUCED_REDUNDANCY",
        "x-amz-content-sha256": "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072",
        "authorization": _auth(
            "date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class",
            "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd",
        ),
    }
    # The example sends "test$file.text" and signs "/test%24file.text": the canonical URI is
    # the path encoded by AWS's rule, whichever way the client wrote it.
    for path in ("/test$file.text", "/test%24file.text"):
        check = _verifier().verify("PUT", path, "", headers, "x").body
        assert check.feed(payload) == payload
        check.finish()


@pytest.mark.parametrize(
    ("query", "signature"),
    [
        ("lifecycle", "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543"),
        ("max-keys=2&prefix=J", "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7"),
        ("prefix=J&max-keys=2", "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7"),
    ],
)
def test_bucket_requests_with_a_query(query: str, signature: str) -> None:
    headers = {
        "host": "examplebucket.s3.amazonaws.com",
        "x-amz-content-sha256": EMPTY,
        "x-amz-date": "20130524T000000Z",
        "authorization": _auth("host;x-amz-content-sha256;x-amz-date", signature),
    }
    _verifier().verify("GET", "/", query, headers, "examplebucket.s3.amazonaws.com")


PRESIGNED_QUERY = (
    "X-Amz-Algorithm=AWS4-HMAC-SHA256"
    "&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request"
    "&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host"
    "&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404"
)


def test_presigned_get_within_and_after_its_life() -> None:
    host = {"host": "examplebucket.s3.amazonaws.com"}
    verified = _verifier().verify("GET", "/test.txt", PRESIGNED_QUERY, host, "x")
    assert verified.principal.access_key_id == KEY_ID
    late = _verifier(WHEN + 86400)
    with pytest.raises(S3AuthError) as refused:
        late.verify("GET", "/test.txt", PRESIGNED_QUERY, host, "x")
    assert (refused.value.code, refused.value.status) == ("AccessDenied", 403)
    assert refused.value.message == "Request has expired"


SEED = "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9"
CHUNKS = [
    (65536, "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648"),
    (1024, "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497"),
    (0, "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9"),
]
STREAMING_HEADERS = {
    "host": "s3.amazonaws.com",
    "x-amz-date": "20130524T000000Z",
    "x-amz-storage-class": "REDUCED_REDUNDANCY",
    "x-amz-content-sha256": "STREAMING-AWS4-HMAC-SHA256-PAYLOAD",
    "content-encoding": "aws-chunked",
    "x-amz-decoded-content-length": "66560",
    "content-length": "66824",
    "authorization": _auth(
        "content-encoding;content-length;host;x-amz-content-sha256;x-amz-date;"
        "x-amz-decoded-content-length;x-amz-storage-class",
        SEED,
    ),
}


def streaming_example(tamper: int | None = None) -> bytes:
    """The example's body; ``tamper``: index of a payload byte to change."""
    wire = bytearray()
    for size, signature in CHUNKS:
        wire += f"{size:x};chunk-signature={signature}\r\n".encode() + b"a" * size + b"\r\n"
    if tamper is not None:
        wire[tamper] = ord("b")
    return bytes(wire)


def test_chunked_upload_with_chunk_signatures() -> None:
    body = streaming_example()
    assert len(body) == 66824
    check = _verifier().verify("PUT", "/examplebucket/chunkObject.txt", "", STREAMING_HEADERS, "x")
    assert check.body.decoded_length == 66560
    assert check.body.feed(body) == b"a" * 66560
    check.body.finish()


@pytest.mark.parametrize("tamper", [100, 66000, 66700])
def test_chunked_upload_with_one_changed_byte_is_refused(tamper: int) -> None:
    check = _verifier().verify("PUT", "/examplebucket/chunkObject.txt", "", STREAMING_HEADERS, "x")
    with pytest.raises(S3AuthError) as refused:
        check.body.feed(streaming_example(tamper))
        check.body.finish()
    assert (refused.value.code, refused.value.status) == ("SignatureDoesNotMatch", 403)


UNRESERVED = "-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


@pytest.mark.parametrize(
    ("name", "path", "query", "signature"),
    [
        (
            "get-vanilla",
            "/",
            "",
            "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31",
        ),
        (
            "get-vanilla-empty-query-key",
            "/",
            "Param1=value1",
            "a67d582fa61cc504c4bae71f336f98b97f1ea3c7a6bfe1b6e45aec72011b9aeb",
        ),
        (
            "get-vanilla-query-order-key-case",
            "/",
            "Param2=value2&Param1=value1",
            "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500",
        ),
        (
            "get-vanilla-query-order-value",
            "/",
            "Param1=value2&Param1=value1",
            "5772eed61e12b33fae39ee5e7012498b51d56abc0abb7c60486157bd471c4694",
        ),
        (
            "get-vanilla-query-unreserved",
            "/",
            f"{UNRESERVED}={UNRESERVED}",
            "9c3e54bfcdf0b19771a7f523ee5669cdf59bc7cc0884027167c21bb143a40197",
        ),
        (
            "get-vanilla-utf8-query",
            "/",
            "\u1234=bar",
            "2cdec8eed098649ff3a119c94853b13c643bcf08f8b0a1d91e12c9027818dd04",
        ),
        (
            "get-unreserved",
            f"/{UNRESERVED}",
            "",
            "07ef7494c76fa4850883e2b006601f940f8a34d404d0cfa977f52a65bbf5f24f",
        ),
        (
            "get-utf8",
            "/\u1234",
            "",
            "8318018e0b0f223aa2bbf98705b62bb787dc9c0e678f255a891fd03141be5d85",
        ),
        (
            "get-space",
            "/example space/",
            "",
            "652487583200325589f1fba4c7e578f72c47cb61beeca81406b39ddec1366741",
        ),
    ],
)
def test_the_published_sigv4_test_suite(name: str, path: str, query: str, signature: str) -> None:
    """AWS's generic SigV4 test suite (service ``service``; its cases that need no path
    normalisation, which S3 does not do): canonical URI and query, key and signature."""
    canonical = sigv4.canonical_request(
        "GET",
        sigv4.canonical_uri(path),
        sigv4.canonical_query(sigv4.split_query(query)),
        [("host", "example.amazonaws.com"), ("x-amz-date", "20150830T123600Z")],
        EMPTY,
    )
    scope = "20150830/us-east-1/service/aws4_request"
    key = sigv4.signing_key(
        "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "20150830", "us-east-1", "service"
    )
    assert (
        sigv4.sign(key, sigv4.string_to_sign("20150830T123600Z", scope, canonical)) == signature
    ), name
