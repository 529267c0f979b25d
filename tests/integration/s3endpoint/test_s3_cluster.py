"""The S3 endpoint in a cluster (issue 33): three real workers joined through a real etcd, on
SeaweedFS, with boto3 at its defaults. A key is served by its owner on the ring whichever
worker a client talks to, so only the owner holds its pages; a write through any worker is read
back through any other (read-your-writes, with every worker's sync interval -1: only the feed
and the owner's revision make them re-check); with the owner down, a worker serves the key
itself, re-checked with the store, and counts it; over TLS the owner is reached over HTTPS,
trusted by the workers' dora.user.tls.ca.file. The access log names the access key id that
signed each request, never a signature."""

import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import httpx
import pytest

from tests.integration.cluster.cluster_support import ClusterWorker
from tests.integration.conftest import BUCKET
from tests.integration.harness import wait_for
from tests.integration.s3endpoint.s3_endpoint_support import KEY_ID, SECRET
from tests.integration.tls.tls_support import tls_defines
from tests.worker.tls.certs import CA
from worker.common.ring import HashRing
from worker.devlab.local.etcd import LocalEtcd
from worker.devlab.local.s3 import LocalS3, free_port

pytestmark = pytest.mark.integration

OWNED = 'dora_s3_owner_requests_total{outcome="served"}'
UNREACHABLE = 'dora_s3_owner_requests_total{outcome="unreachable"}'
SETTLED = 'dora_s3_owner_requests_total{outcome="settled"}'


class S3Worker(ClusterWorker):
    """A cluster worker over bucket ``itest`` of SeaweedFS with its S3 endpoint on; over HTTPS
    with ``ca`` (its certificate's authority, which it also trusts as a client)."""

    def __init__(
        self, work: Path, etcd: LocalEtcd, seaweedfs: LocalS3, ca: CA | None = None
    ) -> None:
        self.s3_port = free_port()
        tls = [] if ca is None else [*tls_defines(ca.issue(work.name)),
                                     f"dora.user.tls.ca.file={ca.file}"]  # fmt: skip
        super().__init__(
            work, work, etcd, f"dora.worker.ufs.roots=s3://{BUCKET}", *seaweedfs.storage_defines(),
            f"dora.worker.s3.port={self.s3_port}", f"dora.worker.s3.access.key.id={KEY_ID}",
            f"dora.worker.s3.secret.access.key={SECRET}", "dora.worker.http.access.log=true",
            *tls,
        )  # fmt: skip
        self.scheme = "http" if ca is None else "https"
        self.verify: bool | str = True if ca is None else str(ca.file)
        self.trusted = None if ca is None else ssl.create_default_context(cafile=str(ca.file))

    def start(self) -> "S3Worker":
        """Started; over TLS, its client for the REST calls trusts ``ca`` (the harness makes a
        plain one at each start)."""
        super().start()
        if self.trusted is not None:
            self.http.close()
            self.http = httpx.Client(base_url=f"https://{self.address}", verify=self.trusted)
        return self

    def s3(self) -> Any:
        return boto3.client("s3", endpoint_url=f"{self.scheme}://127.0.0.1:{self.s3_port}",
                            aws_access_key_id=KEY_ID, aws_secret_access_key=SECRET,
                            region_name="us-east-1", verify=self.verify)  # fmt: skip

    def cached_bytes(self, uri: str) -> int:
        answer = self.status(uri)
        assert answer.status_code == 200, answer.text
        return int(answer.json()["cached_bytes"])


@pytest.fixture(scope="module")
def cluster(
    tmp_path_factory: pytest.TempPathFactory, seaweedfs: LocalS3
) -> Iterator[list[S3Worker]]:
    """Three workers for the module; the last test kills one."""
    tmp_path = tmp_path_factory.mktemp("s3-cluster")
    etcd = LocalEtcd(tmp_path / "etcd").start()
    made = [S3Worker(tmp_path / f"w{i}", etcd, seaweedfs) for i in range(3)]
    try:
        for worker in made:
            worker.start()
        for worker in made:
            wait_for(lambda w=worker: w.metric("dora_cluster_member_registered") == 1)  # type: ignore[misc]
        yield made
    finally:
        for worker in made:
            worker.stop()
            worker.http.close()
        etcd.stop()
    for worker in made:
        assert "Traceback" not in worker.log(), worker.log()


def owner_and_others(workers: list[S3Worker], uri: str) -> tuple[S3Worker, S3Worker, S3Worker]:
    """The worker that owns ``uri`` on the ring the cluster routes by, then the other two."""
    name = HashRing([w.address for w in workers], 200).owner(uri)
    owner = next(w for w in workers if w.address == name)
    first, second = (w for w in workers if w is not owner)
    return owner, first, second


def test_a_key_is_served_by_its_owner_whichever_worker_is_asked(
    cluster: list[S3Worker], s3_root: str
) -> None:
    key = f"{s3_root.removeprefix(f's3://{BUCKET}/')}/table/part-0.bin"
    uri = f"s3://{BUCKET}/{key}"
    owner, a, b = owner_and_others(cluster, uri)
    first = b"first version " * 100_000
    a.s3().put_object(Bucket=BUCKET, Key=key, Body=first)
    assert b.s3().get_object(Bucket=BUCKET, Key=key)["Body"].read() == first
    ranged = a.s3().get_object(Bucket=BUCKET, Key=key, Range="bytes=5-9")["Body"].read()
    assert ranged == first[5:10]
    head = b.s3().head_object(Bucket=BUCKET, Key=key)
    assert head["ContentLength"] == len(first)
    assert owner.cached_bytes(uri) == len(first)
    assert a.cached_bytes(uri) == 0 and b.cached_bytes(uri) == 0
    assert b.metric(OWNED) >= 2 and a.metric(OWNED) >= 1
    traffic = b.http.get("/v1/overview").json()["s3"]  # what the console's Overview shows
    assert traffic["owner_requests"]["served"] >= 2
    assert {"GetObject", "HeadObject"} <= {op["operation"] for op in traffic["operations"]}

    # Read-your-writes through another worker, while the owner holds the first version's pages.
    second = b"second version " * 1000
    b.s3().put_object(Bucket=BUCKET, Key=key, Body=second)
    assert b.metric(SETTLED) >= 1
    assert a.s3().get_object(Bucket=BUCKET, Key=key)["Body"].read() == second
    a.s3().delete_object(Bucket=BUCKET, Key=key)
    with pytest.raises(a.s3().exceptions.NoSuchKey):
        b.s3().get_object(Bucket=BUCKET, Key=key)

    log = a.log()
    assert f"caller={KEY_ID}" in log
    assert "Signature=" not in log and "x-amz-signature" not in log.lower()


@pytest.mark.slow
def test_over_tls_the_owner_is_reached_over_https(
    tmp_path: Path, seaweedfs: LocalS3, tls_ca: CA, s3_root: str
) -> None:
    etcd = LocalEtcd(tmp_path / "etcd").start()
    made = [S3Worker(tmp_path / f"tls{i}", etcd, seaweedfs, tls_ca) for i in range(2)]
    try:
        for worker in made:
            worker.start()
        for worker in made:
            wait_for(lambda w=worker: w.metric("dora_cluster_member_registered") == 1)  # type: ignore[misc]
        key = f"{s3_root.removeprefix(f's3://{BUCKET}/')}/tls.bin"
        uri = f"s3://{BUCKET}/{key}"
        name = HashRing([w.address for w in made], 200).owner(uri)
        owner, other = sorted(made, key=lambda w: w.address != name)
        other.s3().put_object(Bucket=BUCKET, Key=key, Body=b"over https" * 1000)
        for _ in range(2):  # the first read may come before the membership is listed
            got = other.s3().get_object(Bucket=BUCKET, Key=key)["Body"].read()
            assert got == b"over https" * 1000
        assert other.metric(OWNED) >= 1 and other.metric(UNREACHABLE) == 0
        assert owner.cached_bytes(uri) == 10_000
    finally:
        for worker in made:
            worker.stop()
            worker.http.close()
        etcd.stop()


def test_with_its_owner_down_a_worker_serves_the_key_itself(
    cluster: list[S3Worker], s3_root: str
) -> None:
    key = f"{s3_root.removeprefix(f's3://{BUCKET}/')}/down.bin"
    uri = f"s3://{BUCKET}/{key}"
    owner, a, b = owner_and_others(cluster, uri)
    body = b"x" * 300_000
    a.s3().put_object(Bucket=BUCKET, Key=key, Body=body)
    assert b.s3().get_object(Bucket=BUCKET, Key=key)["Body"].read() == body
    owner.kill()  # a crash: etcd lists it as live until its lease lapses
    newer = b"y" * 1000
    a.s3().put_object(Bucket=BUCKET, Key=key, Body=newer)
    assert b.s3().get_object(Bucket=BUCKET, Key=key)["Body"].read() == newer
    assert b.metric(UNREACHABLE) >= 1
    assert b.cached_bytes(uri) == len(newer)
    assert "cannot be reached" in b.log()
