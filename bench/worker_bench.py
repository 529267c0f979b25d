"""Worker read-path benchmark: a real ``dora worker start`` process over SeaweedFS, read through
the REST API, against peers measured in the same session on the same bytes — a raw local file
read (the machine's limit), direct s3fs, and fsspec's simplecache.

    .venv/bin/python -m bench.worker_bench [--mb 256]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import fsspec
import httpx

from worker.client.filesystem import DoraFileSystem
from worker.locals3 import LocalS3

CHUNK = 8 << 20
BUCKET = "bench"


def timed(fn: Callable[[], int]) -> tuple[float, int]:
    started = time.perf_counter()
    n = fn()
    return time.perf_counter() - started, n


def rest_read(client: httpx.Client, uri: str, parallel: int, size: int) -> int:
    """Read the whole object with ``parallel`` ranged requests at a time."""
    ranges = [(o, min(CHUNK, size - o)) for o in range(0, size, CHUNK)]

    def one(item: tuple[int, int]) -> int:
        offset, length = item
        got = client.get("/v1/read", params={"path": uri, "offset": offset, "length": length})
        got.raise_for_status()
        return len(got.content)

    with ThreadPoolExecutor(parallel) as pool:
        return sum(pool.map(one, ranges))


def start_worker(work: Path, s3: LocalS3) -> tuple[subprocess.Popen[bytes], str]:
    state = work / "state.json"
    dora = str(Path(sys.executable).with_name("dora"))
    args = [dora, "worker", "start", "-Ddora.worker.http.port=0", f"-Ddora.work.dir={work}",
            f"-Ddora.worker.ufs.roots=s3://{BUCKET}", "-Ddora.worker.page.store.sizes=4GB",
            *(f"-D{d}" for d in s3.storage_defines()), "--state-file", str(state)]  # fmt: skip
    process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while not state.exists():
        time.sleep(0.05)
    return process, f"http://127.0.0.1:{json.loads(state.read_text())['port']}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=int, default=256)
    args = parser.parse_args()
    size = args.mb << 20
    root = Path(tempfile.mkdtemp(prefix="dora-bench-"))
    payload = os.urandom(size)
    local = root / "local.bin"
    local.write_bytes(payload)
    rows: list[tuple[str, float]] = []

    def record(name: str, fn: Callable[[], int]) -> None:
        seconds, n = timed(fn)
        assert n == size, f"{name} read {n} bytes, expected {size}"
        rows.append((name, size / seconds / 2**20))
        print(f"{name:<44} {rows[-1][1]:9.0f} MiB/s", flush=True)

    def raw() -> int:
        with local.open("rb") as handle:
            return sum(len(b) for b in iter(lambda: handle.read(CHUNK), b""))

    with LocalS3(root / "weed", buckets=(BUCKET,)) as s3:
        s3fs_client = s3.client()
        s3fs_client.pipe_file(f"{BUCKET}/object.bin", payload)
        uri = f"s3://{BUCKET}/object.bin"
        worker, base = start_worker(root / "work", s3)
        try:
            client = httpx.Client(
                base_url=base, timeout=120, limits=httpx.Limits(max_connections=16)
            )
            record("raw local file read (machine limit)", raw)
            record(
                "direct s3fs cat_file", lambda: len(s3fs_client.cat_file(f"{BUCKET}/object.bin"))
            )
            cache_dir = root / "simplecache"
            simple = fsspec.filesystem(
                "simplecache", target_protocol="s3", cache_storage=str(cache_dir),
                target_options={"endpoint_url": s3.endpoint, "key": "doracache",
                                "secret": "doracache-secret"},
            )  # fmt: skip
            record("fsspec simplecache, cold", lambda: len(simple.cat_file(f"{BUCKET}/object.bin")))
            record("fsspec simplecache, warm", lambda: len(simple.cat_file(f"{BUCKET}/object.bin")))
            block = fsspec.filesystem(
                "blockcache", target_protocol="s3", cache_storage=str(root / "blockcache"),
                target_options={"endpoint_url": s3.endpoint, "key": "doracache",
                                "secret": "doracache-secret"},
            )  # fmt: skip
            record("fsspec blockcache, cold", lambda: len(block.cat_file(f"{BUCKET}/object.bin")))
            record("fsspec blockcache, warm", lambda: len(block.cat_file(f"{BUCKET}/object.bin")))
            record("dora REST, cold (1 stream)", lambda: rest_read(client, uri, 1, size))
            record("dora REST, warm (1 stream)", lambda: rest_read(client, uri, 1, size))
            record("dora REST, warm (4 parallel ranges)", lambda: rest_read(client, uri, 4, size))
            dora = DoraFileSystem(workers=[base.removeprefix("http://")])
            record("dora fsspec client cat_file, warm", lambda: len(dora.cat_file(uri)))
            started, n = time.perf_counter(), 0
            while time.perf_counter() - started < 3:
                client.get("/v1/status", params={"path": uri}).raise_for_status()
                n += 1
            print(f"{'dora REST /v1/status, warm':<44} {n / 3:9.0f} calls/s", flush=True)
            client.close()
        finally:
            worker.terminate()
            worker.wait()
    limit = rows[0][1]
    print("\nratio to the raw local read:")
    for name, rate in rows:
        print(f"  {name:<42} {rate / limit:6.2f}")


if __name__ == "__main__":
    main()
