"""Alluxio's own Python client, ``alluxiofs``, unchanged, against a real worker process on
SeaweedFS (issue 15): every result equals a direct read of S3, and alluxiofs's own error
counters stay at zero (the client keeps an S3 fallback, so a call our worker failed would
otherwise succeed silently from S3).

Three versions, as users run them: 1.0.22 (pinned in the dev extras, with pandas on top),
1.1.17 (reads byte ranges from Alluxio's S3 API at port 29998, so its worker listens there
too, on an address of its own in 127/8), and 1.0.17 (the last that finds workers through
etcd, where our workers register in Alluxio's layout).
"""

import base64
import hashlib
import io
import os
import random
import re
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import s3fs

from tests.integration.clients import alluxiofs_driver
from tests.integration.clients.alluxiofs_support import INSTALL_TIMEOUT_S, PINNED, drive
from tests.integration.harness import WorkerProcess
from worker.devlab.local.etcd import LocalEtcd
from worker.devlab.local.s3 import ACCESS_KEY, SECRET_KEY, LocalS3

pytestmark = pytest.mark.integration
SIZE = (5 << 19) + 321  # 2.5 MB and some: several 1 MB pages, a short last one
S3_PORT = 29998  # where alluxiofs 1.1.x sends its ranged reads, whatever is configured


def digest(data: bytes) -> dict[str, Any]:
    return {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}


@pytest.fixture
def tree(s3_raw: s3fs.S3FileSystem, s3_root: str) -> dict[str, bytes]:
    """Files under ``<root>/data``: a multi-page binary, a CSV, one in a subdirectory and a
    name with a '+' (alluxiofs puts paths into URLs unencoded)."""
    files = {
        "data/a.bin": os.urandom(SIZE),
        "data/b.csv": b"x,y\n1,2\n3,4\n",
        "data/sub/c.txt": b"in a subdirectory",
        "data/p+q.txt": b"a plus, not a space",
    }
    for name, content in files.items():
        s3_raw.pipe(f"{s3_root}/{name}", content)
    return files


def scenario(version: str, root: str, tree: dict[str, bytes]) -> list[tuple[list[Any], Any]]:
    """(operation, expected result) pairs; expectations are direct reads of the data."""
    data, a = f"{root}/data", tree["data/a.bin"]
    steps = [[0, 10], [2_000_000, 100], [5, 1 << 20], [SIZE - 7, 100]]
    seeks = b"".join(a[start : start + count] for start, count in steps)
    written, page = os.urandom(300_000), os.urandom(1000)
    files = ("a.bin", "b.csv", "p+q.txt")
    listing = sorted([[f"{data}/{name}", len(tree[f"data/{name}"]), "file"] for name in files])
    listing.append([f"{data}/sub", 0, "directory"])
    # Names are Alluxio namespace paths (mPath); 1.1.17's own ls(detail=False) fails before
    # reading them (its records have no `path`), so it is not asked.
    names = [] if version == "1.1.17" else [(["ls_names", data], sorted(
        f"/s3/{entry[0].removeprefix('s3://')}" for entry in listing))]  # fmt: skip
    return [
        (["ls", data], listing),
        *names,
        (["info", f"{data}/a.bin"], {"ufs_path": f"{data}/a.bin", "size": SIZE, "type": "file"}),
        (["info", f"{data}/sub"], {"ufs_path": f"{data}/sub", "size": 0, "type": "directory"}),
        (["exists", f"{data}/a.bin"], True),
        (["exists", f"{data}/missing"], False),
        (["isdir", f"{data}/sub"], True),
        (["cat", f"{data}/a.bin"], digest(a)),
        (["cat", f"{data}/a.bin", 1000, 1_500_000], digest(a[1000:1_500_000])),
        (["cat", f"{data}/p+q.txt"], digest(tree["data/p+q.txt"])),
        (["chunked", f"{data}/a.bin"], digest(a)),
        (["open_seek", f"{data}/a.bin", steps], digest(seeks)),
        (["head", f"{data}/a.bin", 100], digest(a[:100])),
        (["tail", f"{data}/a.bin", 100], digest(a[-100:])),
        (["write", f"{root}/out/w.bin", base64.b64encode(written).decode()], True),
        (["cat", f"{root}/out/w.bin"], digest(written)),
        (["write_page", f"{root}/out/p.bin", 0, base64.b64encode(page).decode()], True),
        (["cat", f"{root}/out/p.bin"], digest(page)),
        (["mkdir", f"{root}/made"], True),
        (["touch", f"{root}/made/t.txt"], True),
        (["mv", f"{root}/made/t.txt", f"{root}/made/u.txt"], True),
        (["copy", f"{data}/b.csv", f"{root}/out/copy.csv"], True),
        (["cat", f"{root}/out/copy.csv"], digest(tree["data/b.csv"])),
        (["rm", f"{root}/out/copy.csv"], True),
        (["load_submit", data], True),
        (["load_wait", data], "SUCCEEDED"),
        (["load_stop", data], False),
    ]


def run_scenario(
    version: str,
    client: dict[str, Any],
    s3_raw: s3fs.S3FileSystem,
    root: str,
    tree: dict[str, bytes],
) -> None:
    """The scenario through alluxiofs ``version``: results as expected, no error counted, and
    the mutations' effects in S3. The pinned version runs in process (a failure shows its own
    traceback), the others in their virtualenvs."""
    expected = scenario(version, root, tree)
    ops = [op for op, _ in expected]
    if version == PINNED:
        results = alluxiofs_driver.run(alluxiofs_driver.make_fs(client), ops)
    else:
        results = drive(version, client, ops)
    got = [r.get("value", r.get("error")) for r in results["results"]]
    mismatched = [(op, want, was) for (op, want), was in zip(expected, got, strict=True)
                  if was != want]  # fmt: skip
    assert not mismatched, f"alluxiofs {version}: {mismatched}"
    assert results["errors"] == {}, f"alluxiofs {version} fell back to S3: {results['errors']}"
    s3_raw.invalidate_cache()
    assert s3_raw.cat(f"{root}/made/u.txt") == b""
    assert not s3_raw.exists(f"{root}/made/t.txt")
    assert not s3_raw.exists(f"{root}/out/copy.csv")


def s3_client(seaweedfs: LocalS3) -> dict[str, Any]:
    return {"s3_endpoint": seaweedfs.endpoint, "s3_key": ACCESS_KEY, "s3_secret": SECRET_KEY}


@pytest.fixture
def worker(tmp_path: Path, seaweedfs: LocalS3, s3_root: str) -> Iterator[WorkerProcess]:
    bucket = s3_root.removeprefix("s3://").split("/")[0]
    process = WorkerProcess(
        tmp_path, f"dora.worker.ufs.roots=s3://{bucket}", *seaweedfs.storage_defines()
    )
    yield process
    process.stop()


def test_alluxiofs_1_0_22(
    worker: WorkerProcess,
    seaweedfs: LocalS3,
    s3_raw: s3fs.S3FileSystem,
    s3_root: str,
    tree: dict[str, bytes],
) -> None:
    client = {"worker_hosts": worker.address, **s3_client(seaweedfs)}
    run_scenario(PINNED, client, s3_raw, s3_root, tree)
    stats = worker.http.get("/v1/stats").json()
    assert stats["bytes_from_ufs"] + stats["bytes_from_cache"] >= 3 * SIZE


def test_pandas_through_alluxiofs_1_0_22(
    worker: WorkerProcess, seaweedfs: LocalS3, s3_raw: s3fs.S3FileSystem, s3_root: str
) -> None:
    frame = pd.DataFrame({"id": range(50_000), "name": [f"n{i % 97}" for i in range(50_000)]})
    s3_raw.pipe(f"{s3_root}/t.csv", frame.to_csv(index=False).encode())
    parquet = io.BytesIO()
    frame.to_parquet(parquet)
    s3_raw.pipe(f"{s3_root}/t.parquet", parquet.getvalue())
    fs = alluxiofs_driver.make_fs({"worker_hosts": worker.address, **s3_client(seaweedfs)})
    with fs.open(f"{s3_root}/t.csv") as f:
        pd.testing.assert_frame_equal(pd.read_csv(f), frame)
    pd.testing.assert_frame_equal(pd.read_parquet(f"{s3_root}/t.parquet", filesystem=fs), frame)
    columns = pd.read_parquet(f"{s3_root}/t.parquet", filesystem=fs, columns=["name"])
    pd.testing.assert_frame_equal(columns, frame[["name"]])
    assert fs.get_error_metrics()["error_counts"] == {}


def requests_to(worker: WorkerProcess, route: str) -> float:
    metrics = worker.http.get("/metrics").text
    found = re.search(rf'^dora_request_seconds_count{{route="{re.escape(route)}"}} (\S+)$',
                      metrics, re.MULTILINE)  # fmt: skip
    return float(found.group(1)) if found else 0.0


def free_loopback_address(port: int) -> str:
    """An address in 127/8 (all of it is loopback on Linux) where ``port`` is free, so the
    fixed port 29998 never collides with another test run."""
    for _ in range(50):
        host = f"127.{random.randint(1, 254)}.{random.randint(0, 255)}.{random.randint(2, 254)}"
        with socket.socket() as probe:
            try:
                probe.bind((host, port))
            except OSError:
                continue
            return host
    raise AssertionError(f"no loopback address with port {port} free")


# Building the version's virtualenv on first use (`make test` builds it ahead) takes minutes.
@pytest.mark.timeout(INSTALL_TIMEOUT_S + 300)
def test_alluxiofs_1_1_17(
    tmp_path: Path,
    seaweedfs: LocalS3,
    s3_raw: s3fs.S3FileSystem,
    s3_root: str,
    tree: dict[str, bytes],
) -> None:
    bucket = s3_root.removeprefix("s3://").split("/")[0]
    host = free_loopback_address(S3_PORT)
    process = WorkerProcess(
        tmp_path, f"dora.worker.ufs.roots=s3://{bucket}", f"dora.worker.http.bind.host={host}",
        f"dora.worker.alluxio.s3.port={S3_PORT}", *seaweedfs.storage_defines(),
    )  # fmt: skip
    try:
        client = {"worker_hosts": process.address, **s3_client(seaweedfs)}
        run_scenario("1.1.17", client, s3_raw, s3_root, tree)
        assert requests_to(process, "/v1/object/{path:path}") > 0  # its ranged reads came here
    finally:
        process.stop()


@pytest.mark.timeout(INSTALL_TIMEOUT_S + 300)
def test_alluxiofs_1_0_17_finds_workers_through_etcd(
    tmp_path: Path,
    seaweedfs: LocalS3,
    s3_raw: s3fs.S3FileSystem,
    s3_root: str,
    tree: dict[str, bytes],
) -> None:
    bucket = s3_root.removeprefix("s3://").split("/")[0]
    worker_dir = tmp_path / "worker"
    worker_dir.mkdir()
    with LocalEtcd(tmp_path / "etcd") as etcd:
        process = WorkerProcess(
            worker_dir, f"dora.worker.ufs.roots=s3://{bucket}",
            f"dora.cluster.etcd.endpoints={etcd.endpoint}",
            "dora.worker.alluxio.node.answer=locations", *seaweedfs.storage_defines(),
        )  # fmt: skip
        try:
            client = {
                "etcd_hosts": "127.0.0.1",
                "etcd_port": etcd.client_port,
                # Its ring-refresh thread sleeps this long between fetches and is joined at
                # exit; off, the driver exits when done. The ring is read once at start.
                "etcd_refresh_workers_interval": -1,
                **s3_client(seaweedfs),
            }
            run_scenario("1.0.17", client, s3_raw, s3_root, tree)
        finally:
            process.stop()
