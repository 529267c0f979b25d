"""What checking S3 signatures costs: :meth:`Verifier.verify` per request and
:class:`BodyCheck` throughput, in process, side by side in one run.

    .venv/bin/python -m bench.experiments.s3auth_bench [--requests 20000] [--mib 64] [--repeats 5]

Requests are what boto3 sends (captured before they leave, as the tests do): a header-signed
GetObject, the same with the signing-key cache emptied before each (the cost without the
cache), and a presigned GET. Bodies of ``--mib`` MiB are fed in 64 KiB pieces (what an ASGI
server hands over) in each payload mode boto3, the C++ SDK and others send: signed aws-chunked
with 64 KiB chunks, unsigned aws-chunked with boto3's 1 MiB chunks and a CRC32 or CRC64NVME
trailer, a hex SHA-256 payload with a CRC32 header; a plain ``hashlib.sha256`` pass over the same
bytes is the yardstick. Times are this process's CPU time (the machine is shared), the cases
run round robin; prints medians with min-max.
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import time
from collections.abc import Callable

from tests.worker.api.s3auth.captured import (
    Sent,
    aws_chunked,
    botocore_signed,
    capture,
    client,
    presigned,
    verifier,
)
from worker.api.s3auth import sigv4

PIECE = 64 << 10


def _per_request(sent: Sent, count: int, before: Callable[[], None] | None = None) -> float:
    check = verifier()
    start = time.process_time()
    for _ in range(count):
        if before is not None:
            before()
        sent.verify(check)
    return (time.process_time() - start) / count * 1e6


def _throughput(sent: Sent) -> float:
    check = sent.verify(verifier()).body
    body = memoryview(sent.body)
    start = time.process_time()
    for offset in range(0, len(body), PIECE):
        check.feed(bytes(body[offset : offset + PIECE]))
    check.finish()
    return len(sent.body) / (time.process_time() - start) / 1e6


def _sha256_throughput(payload: bytes) -> float:
    import hashlib

    digest = hashlib.sha256()
    start = time.process_time()
    for offset in range(0, len(payload), PIECE):
        digest.update(payload[offset : offset + PIECE])
    return len(payload) / (time.process_time() - start) / 1e6


def _signed_chunked(payload: bytes) -> Sent:
    """A signed aws-chunked PUT: the seed as boto3 signs a GET (its headers with the streaming
    mode), the chunks chained to it."""
    mode = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
    sent, signing = botocore_signed(mode, b"", length=len(payload))
    body = aws_chunked(payload, itertools.repeat(64 << 10), signing)
    return Sent(sent.method, sent.path, sent.query, sent.headers, sent.host, body)


def _median(values: list[float]) -> str:
    return f"{statistics.median(values):.1f} ({min(values):.1f}-{max(values):.1f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=20000)
    parser.add_argument("--mib", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    s3 = client()
    get = capture(lambda: s3.get_object(Bucket="bucket", Key="dir/part-0001.parquet"))
    url = client(signature_version="s3v4").generate_presigned_url(
        "get_object", Params={"Bucket": "bucket", "Key": "dir/part-0001.parquet"}
    )
    requests: dict[str, Callable[[], float]] = {
        "header-signed GET": lambda: _per_request(get, args.requests),
        "header-signed GET, no key cache": lambda: _per_request(
            get, args.requests // 4, sigv4.signing_key.cache_clear
        ),
        "presigned GET": lambda: _per_request(presigned(url), args.requests),
    }
    payload = os.urandom(args.mib << 20)
    bodies: dict[str, Callable[[], float]] = {
        "signed aws-chunked, 64 KiB chunks": lambda: _throughput(_signed_chunked(payload)),
        "unsigned aws-chunked + CRC32 trailer (boto3 default)": lambda: _throughput(
            capture(lambda: s3.put_object(Bucket="b", Key="k", Body=payload))
        ),
        "unsigned aws-chunked + CRC64NVME trailer": lambda: _throughput(
            capture(
                lambda: s3.put_object(
                    Bucket="b", Key="k", Body=payload, ChecksumAlgorithm="CRC64NVME"
                )
            )
        ),
        "hex SHA-256 payload + CRC32 header (boto3 over http)": lambda: _throughput(
            capture(
                lambda: client("http://127.0.0.1:9000").put_object(
                    Bucket="b", Key="k", Body=payload
                )
            )
        ),
        "yardstick: hashlib.sha256 alone": lambda: _sha256_throughput(payload),
    }
    runs: dict[str, list[float]] = {name: [] for name in [*requests, *bodies]}
    for _ in range(args.repeats):  # round robin, so a burst of load hits every case alike
        for name, run in [*requests.items(), *bodies.items()]:
            runs[name].append(run())
    print(f"verify() per request, CPU µs (median of {args.repeats}, min-max):")
    for name in requests:
        print(f"  {name}: {_median(runs[name])}")
    print(f"BodyCheck throughput, MB/s of CPU time, {args.mib} MiB in 64 KiB pieces:")
    for name in bodies:
        print(f"  {name}: {_median(runs[name])}")


if __name__ == "__main__":
    main()
