"""boto3's presigned URLs at its default settings: Signature Version 2 for S3 in us-east-1
(``AWSAccessKeyId``, ``Expires``, ``Signature``), verified, and refused when forged, expired,
foreign or used for another key or method."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest

from tests.worker.api.s3auth.captured import OTHER_KEY_ID, client, presigned, verifier
from tests.worker.api.s3auth.test_boto import KEYS, PAYLOAD
from worker.api.s3auth import S3AuthError


def _url(method: str = "get_object", expires: int = 3600, **params: object) -> str:
    url: str = client().generate_presigned_url(
        method, Params={"Bucket": "b", "Key": "k", **params}, ExpiresIn=expires
    )
    assert "AWSAccessKeyId=" in url and "X-Amz-Signature" not in url
    return url


@pytest.mark.parametrize("key", KEYS)
def test_default_presigned_get_and_put(key: str) -> None:
    verified = presigned(_url(Key=key)).verify(verifier())
    assert verified.principal.access_key_id is not None
    assert presigned(_url("put_object", Key=key), "PUT", PAYLOAD).through(verifier()) == PAYLOAD


def test_sub_resources_and_headers_moved_into_the_query() -> None:
    presigned(
        _url(ResponseContentType="text/plain; charset=utf-8", ResponseContentDisposition="x y")
    ).verify(verifier())
    presigned(_url("upload_part", UploadId="u+1/2", PartNumber=3), "PUT", b"x").through(verifier())
    presigned(_url("put_object", ContentType="application/x-parquet"), "PUT", b"x").verify(
        verifier()
    )
    presigned(_url("put_object", Metadata={"owner": "me"}), "PUT", b"x").verify(verifier())


def test_a_second_key_pair() -> None:
    from tests.worker.api.s3auth.captured import OTHER_SECRET

    url = client(key_id=OTHER_KEY_ID, secret=OTHER_SECRET).generate_presigned_url(
        "get_object", Params={"Bucket": "b", "Key": "k"}
    )
    assert presigned(url).verify(verifier()).principal.access_key_id == OTHER_KEY_ID


def _code(run: object) -> tuple[str, int]:
    with pytest.raises(S3AuthError) as refused:
        run()  # type: ignore[operator]
    return refused.value.code, refused.value.status


def test_refusals() -> None:
    sent = presigned(_url(expires=60))
    late = verifier(clock=lambda: time.time() + 120)
    assert _code(lambda: sent.verify(late)) == ("AccessDenied", 403)
    assert _code(lambda: replace(sent, path="/b/k2").verify(verifier())) == (
        "SignatureDoesNotMatch",
        403,
    )
    assert _code(lambda: replace(sent, method="DELETE").verify(verifier())) == (
        "SignatureDoesNotMatch",
        403,
    )
    forged = replace(sent, query=sent.query.replace("Signature=", "Signature=A"))
    assert _code(lambda: forged.verify(verifier())) == ("SignatureDoesNotMatch", 403)
    foreign = client(key_id="AKIDUNKNOWN").generate_presigned_url(
        "get_object", Params={"Bucket": "b", "Key": "k"}
    )
    assert _code(lambda: presigned(foreign).verify(verifier())) == ("InvalidAccessKeyId", 403)
    added = sent.with_headers(x_amz_meta_a="b")
    assert _code(lambda: added.verify(verifier())) == ("SignatureDoesNotMatch", 403)
    too_long = presigned(_url(expires=30 * 24 * 3600))
    assert _code(lambda: too_long.verify(verifier())) == ("AuthorizationQueryParametersError", 400)
