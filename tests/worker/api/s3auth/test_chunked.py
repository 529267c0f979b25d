"""aws-chunked bodies: any framing and any split of the received bytes decode to the payload;
malformed, truncated, oversized or tampered bodies are an S3AuthError, never another exception
and never wrong bytes; memory stays bounded whatever the chunk size."""

from __future__ import annotations

import base64
import itertools
import tracemalloc
import zlib
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.worker.api.s3auth.captured import aws_chunked
from worker.api.s3auth import BodyCheck, S3AuthError, sigv4
from worker.api.s3auth.chunked import MAX_LINE, ChunkChain
from worker.api.s3auth.payload import plan_body

KEY = sigv4.signing_key("secret", "20261129", "us-east-1", "s3")
TIMESTAMP = "20261129T080000Z"
SCOPE = "20261129/us-east-1/s3/aws4_request"
SEED = "a" * 64
SIGNING = (KEY, TIMESTAMP, SCOPE, SEED)
SIGNED = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
SIGNED_TRAILER = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"
UNSIGNED_TRAILER = "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
MODES = [SIGNED, SIGNED_TRAILER, UNSIGNED_TRAILER]


def _crc32(payload: bytes) -> str:
    return base64.b64encode(zlib.crc32(payload).to_bytes(4, "big")).decode()


def _body(mode: str, payload: bytes, sizes: Iterator[int]) -> bytes:
    trailer = ("x-amz-checksum-crc32", _crc32(payload)) if mode != SIGNED else None
    return aws_chunked(payload, sizes, SIGNING if mode != UNSIGNED_TRAILER else None, trailer)


def _check(mode: str, length: int) -> BodyCheck:
    headers = {"x-amz-decoded-content-length": str(length)}
    if mode != SIGNED:
        headers["x-amz-trailer"] = "x-amz-checksum-crc32"
    return plan_body(mode, headers, ChunkChain(KEY, TIMESTAMP, SCOPE, SEED), False)


def _decode(check: BodyCheck, body: bytes, cuts: list[int]) -> bytes:
    out = bytearray()
    edges = [0, *sorted(c % (len(body) + 1) for c in cuts), len(body)]
    for start, end in itertools.pairwise(edges):
        out += check.feed(body[start:end])
    check.finish()
    return bytes(out)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    mode=st.sampled_from(MODES),
    payload=st.binary(max_size=5000),
    sizes=st.lists(st.integers(1, 2000), min_size=1, max_size=20),
    cuts=st.lists(st.integers(0, 10**6), max_size=30),
)
def test_any_framing_and_any_split_decode_to_the_payload(
    mode: str, payload: bytes, sizes: list[int], cuts: list[int]
) -> None:
    body = _body(mode, payload, itertools.cycle(sizes))
    assert _decode(_check(mode, len(payload)), body, cuts) == payload


@settings(max_examples=300, deadline=None)
@given(
    mode=st.sampled_from(MODES),
    payload=st.binary(min_size=1, max_size=3000),
    at=st.integers(0, 10**6),
    xor=st.integers(1, 255),
    cuts=st.lists(st.integers(0, 10**6), max_size=5),
)
def test_a_changed_byte_never_yields_other_bytes(
    mode: str, payload: bytes, at: int, xor: int, cuts: list[int]
) -> None:
    """One byte changed anywhere in the body: refused, or (a byte that does not count, like the
    case of a hex digit) the same payload; never different payload bytes accepted."""
    body = bytearray(_body(mode, payload, itertools.cycle([700])))
    body[at % len(body)] ^= xor
    try:
        decoded = _decode(_check(mode, len(payload)), bytes(body), cuts)
    except S3AuthError:
        return
    assert decoded == payload


@settings(max_examples=300, deadline=None)
@given(mode=st.sampled_from(MODES), data=st.binary(max_size=400), length=st.integers(0, 500))
def test_arbitrary_bytes_are_refused_with_an_s3_error(mode: str, data: bytes, length: int) -> None:
    try:
        _decode(_check(mode, length), data, [])
    except S3AuthError as error:
        assert error.status in (400, 403)


@pytest.mark.parametrize("mode", MODES)
def test_every_truncation_is_refused(mode: str) -> None:
    payload = b"0123456789" * 30
    body = _body(mode, payload, itertools.cycle([128]))
    for end in range(len(body) - 2):
        with pytest.raises(S3AuthError) as refused:
            _decode(_check(mode, len(payload)), body[:end], [])
        assert refused.value.code in ("IncompleteBody", "InvalidArgument", "InvalidRequest")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("extra", [b"0\r\n\r\n", b"x-amz-checksum-crc32:AAAAAA==\r\n\r\n"])
def test_data_after_the_end_is_refused(mode: str, extra: bytes) -> None:
    body = _body(mode, b"payload", iter([100]))
    for cuts in ([], [len(body)]):
        with pytest.raises(S3AuthError) as refused:
            _decode(_check(mode, 7), body + extra, cuts)
        assert refused.value.message == "Data follows the end of the aws-chunked body."


def test_a_chunk_larger_than_the_declared_length_is_refused_at_its_header() -> None:
    check = _check(UNSIGNED_TRAILER, 10)
    with pytest.raises(S3AuthError) as refused:
        check.feed(b"40000000\r\n")
    assert refused.value.code == "InvalidArgument"


def test_an_endless_chunk_header_is_refused_after_max_line() -> None:
    check = _check(UNSIGNED_TRAILER, 10)
    with pytest.raises(S3AuthError) as refused:
        for _ in range(MAX_LINE):
            check.feed(b"0" * 7)
    assert refused.value.code == "InvalidArgument"


@pytest.mark.parametrize(
    "body",
    [
        b"zz\r\nab\r\n0\r\n\r\n",
        b"2\r\nabc\r\n0\r\n\r\n",
        b"-2\r\nab\r\n0\r\n\r\n",
        b"2;chunk-signature=" + b"0" * 64 + b"\r\nab\r\n0\r\n\r\n",
        b"2\r\nab\r\n0\r\nno colon here\r\n\r\n",
        b"2\r\nab\r\n0\r\nx-amz-checksum-crc32:" + b"A" * (5000) + b"\r\n\r\n",
    ],
)
def test_malformed_frames(body: bytes) -> None:
    with pytest.raises(S3AuthError) as refused:
        _decode(_check(UNSIGNED_TRAILER, 2), body, [])
    assert refused.value.status == 400


def test_signed_chunks_without_signatures_are_refused() -> None:
    body = _body(UNSIGNED_TRAILER, b"ab", iter([2]))
    with pytest.raises(S3AuthError) as refused:
        _decode(_check(SIGNED_TRAILER, 2), body, [])
    assert refused.value.code == "InvalidArgument"


def test_a_chunk_signature_of_another_chain_is_refused() -> None:
    other = (KEY, TIMESTAMP, SCOPE, "b" * 64)
    body = aws_chunked(b"payload", iter([3, 3, 3]), other)
    with pytest.raises(S3AuthError) as refused:
        _decode(_check(SIGNED, 7), body, [])
    assert (refused.value.code, refused.value.status) == ("SignatureDoesNotMatch", 403)


def test_a_bad_trailer_signature_is_refused() -> None:
    body = _body(SIGNED_TRAILER, b"payload", iter([100]))
    head, _, signature = body.rstrip(b"\r\n").rpartition(b"x-amz-trailer-signature:")
    forged = head + b"x-amz-trailer-signature:" + b"0" * 64 + b"\r\n\r\n"
    assert signature != b"0" * 64
    with pytest.raises(S3AuthError) as refused:
        _decode(_check(SIGNED_TRAILER, 7), forged, [])
    assert refused.value.code == "SignatureDoesNotMatch"


@pytest.mark.parametrize("mode", [SIGNED, UNSIGNED_TRAILER])
def test_memory_stays_bounded_for_a_64_mib_chunk(mode: str) -> None:
    size = 64 << 20
    piece = b"x" * (1 << 20)
    check = _check(mode, size)
    tracemalloc.start()
    try:
        check.feed(
            f"{size:x};chunk-signature={'0' * 64}\r\n".encode()
            if mode == SIGNED
            else f"{size:x}\r\n".encode()
        )
        for _ in range(64):
            assert len(check.feed(piece)) == len(piece)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 << 20
