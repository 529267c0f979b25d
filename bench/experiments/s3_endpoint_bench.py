"""The S3 endpoint against ``/v1/read`` of the same real worker process, warm (every page
cached), side by side in one run, over a local-directory UFS (the store is not what is
measured): what S3's surface, its signature check included, costs per request.

Run with ``.venv/bin/python -m bench.experiments.s3_endpoint_bench`` (``--reps``, ``--requests``).
Starts
``dora worker start`` with the S3 endpoint on a free port and one key pair, writes a 64 MB file,
warms the cache, then per round, the contenders interleaved, on one keep-alive connection each:
- ``large``: the whole 64 MB file, ``--large`` times (MiB/s): ``/v1/read``, an S3 GET signed
  as boto3 signs it (header SigV4, ``UNSIGNED-PAYLOAD`` is not what boto3 sends for a GET: it
  sends the empty body's hash), and an anonymous S3 GET (no signature to check);
- ``range``: 64 KiB at spread offsets, ``--requests`` times, each contender's p50 latency (ms)
  on a kept-alive connection: ``/v1/read`` with offset/length, and S3 GETs with ``Range``
  (signed, then anonymous); the client's own signing is done before the clock starts.
Prints the median and min-max of each figure over ``--reps`` rounds, and the ratios.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

SIZE = 64 << 20
RANGE = 64 << 10
KEY_ID, SECRET = "bench", "bench-secret"
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def start_worker(base: Path, data: Path) -> tuple[subprocess.Popen[bytes], str, str]:
    """The worker, its REST URL and its S3 URL."""
    state, s3_port = base / "state.json", _free_port()
    args = [sys.executable, "-m", "worker.cli.main", "worker", "start",
            f"-Ddora.work.dir={base / 'work'}", "-Ddora.worker.http.port=0",
            f"-Ddora.worker.ufs.roots=file://{data}", "-Ddora.worker.page.store.sizes=512MB",
            f"-Ddora.worker.s3.port={s3_port}", f"-Ddora.worker.s3.buckets=data=file://{data}",
            f"-Ddora.worker.s3.access.key.id={KEY_ID}", "-Ddora.worker.s3.anonymous=true",
            "--state-file", str(state)]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("DORA_")}
    env["DORA_WORKER_S3_SECRET_ACCESS_KEY"] = SECRET
    worker = subprocess.Popen(args, env=env, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not state.exists():
        if worker.poll() is not None or time.monotonic() > deadline:
            worker.kill()
            raise RuntimeError("the worker did not start")
        time.sleep(0.05)
    port = json.loads(state.read_text())["port"]
    return worker, f"http://127.0.0.1:{port}", f"http://127.0.0.1:{s3_port}"


def signed(url: str, headers: dict[str, str]) -> dict[str, str]:
    """``headers`` and a SigV4 signature of a GET of ``url``, as boto3 signs one."""
    request = AWSRequest(method="GET", url=url, headers={**headers,
                         "x-amz-content-sha256": EMPTY_SHA256})  # fmt: skip
    S3SigV4Auth(Credentials(KEY_ID, SECRET), "s3", "us-east-1").add_auth(request)
    return dict(request.headers.items())


def large(client: httpx.Client, url: str, headers: dict[str, str], count: int) -> float:
    """MiB/s of ``count`` whole GETs of ``url``."""
    started = time.perf_counter()
    for _ in range(count):
        got = 0
        with client.stream("GET", url, headers=headers) as answer:
            if answer.status_code != 200:
                raise RuntimeError(f"{url}: {answer.status_code}")
            for chunk in answer.iter_raw(1 << 20):
                got += len(chunk)
        if got != SIZE:
            raise RuntimeError(f"{url}: {got} bytes")
    return count * SIZE / (1 << 20) / (time.perf_counter() - started)


def ranged(client: httpx.Client, requests: list[tuple[str, dict[str, str]]]) -> float:
    """p50 latency (ms) of the GETs ``requests`` (URL and headers, made before the clock)."""
    times = []
    for url, headers in requests:
        started = time.perf_counter()
        answer = client.get(url, headers=headers)
        times.append(time.perf_counter() - started)
        if answer.status_code not in (200, 206) or len(answer.content) != RANGE:
            raise RuntimeError(f"{url}: {answer.status_code}")
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--requests", type=int, default=500)
    parser.add_argument("--large", type=int, default=3)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as temp:
        base = Path(temp)
        data = base / "data"
        data.mkdir()
        (data / "big.bin").write_bytes(os.urandom(SIZE))
        worker, rest, s3 = start_worker(base, data)
        try:
            run(options, rest, s3, f"file://{data}/big.bin")
        finally:
            worker.send_signal(signal.SIGTERM)
            worker.wait(timeout=60)


def run(options: argparse.Namespace, rest: str, s3: str, uri: str) -> None:
    offsets = [(i * 7919 * RANGE) % (SIZE - RANGE) for i in range(options.requests)]
    object_url = f"{s3}/data/big.bin"
    figures: dict[str, list[float]] = {}
    with httpx.Client(timeout=120) as client:
        large(client, f"{rest}/v1/read?path={uri}", {}, 1)  # warm every page
        for _ in range(options.reps):
            rounds = {
                "large /v1/read MiB/s": lambda: large(client, f"{rest}/v1/read?path={uri}", {},
                                                      options.large),
                "large S3 signed MiB/s": lambda: large(client, object_url,
                                                       signed(object_url, {}), options.large),
                "large S3 anonymous MiB/s": lambda: large(client, object_url, {}, options.large),
                "64KiB /v1/read p50 ms": lambda: ranged(client, [
                    (f"{rest}/v1/read?path={uri}&offset={o}&length={RANGE}", {})
                    for o in offsets]),
                "64KiB S3 signed p50 ms": lambda: ranged(client, [
                    (object_url, signed(object_url, {"Range": f"bytes={o}-{o + RANGE - 1}"}))
                    for o in offsets]),
                "64KiB S3 anonymous p50 ms": lambda: ranged(client, [
                    (object_url, {"Range": f"bytes={o}-{o + RANGE - 1}"}) for o in offsets]),
            }  # fmt: skip
            for name, measure in rounds.items():
                figures.setdefault(name, []).append(measure())
    for name, values in figures.items():
        print(
            f"{name:28s} {statistics.median(values):10.3f}  [{min(values):.3f}-{max(values):.3f}]"
        )
    median = {name: statistics.median(values) for name, values in figures.items()}
    print(
        f"S3 signed / /v1/read, 64 MB throughput: "
        f"{median['large S3 signed MiB/s'] / median['large /v1/read MiB/s']:.2f}x"
    )
    check = median["64KiB S3 signed p50 ms"] - median["64KiB S3 anonymous p50 ms"]
    print(f"signature check, 64 KiB GET p50: {check:+.3f} ms")


if __name__ == "__main__":
    main()
