"""Every client setting is a storage option (issue 22 item 8): pandas and Polars reach a worker
that only a real etcd names, with the cluster settings given as ``storage_options`` (Polars's
as text), and a misspelled option fails with the site file's did-you-mean error."""

from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import polars as pl
import polars.testing
import pytest

from tests.integration.cluster.cluster_support import ClusterWorker
from tests.integration.harness import wait_for
from worker.devlab.local.etcd import LocalEtcd

pytestmark = pytest.mark.integration


@pytest.fixture
def worker(tmp_path: Path) -> Iterator[tuple[ClusterWorker, LocalEtcd, Path]]:
    data = tmp_path / "data"
    data.mkdir()
    etcd = LocalEtcd(tmp_path / "etcd").start()
    member = ClusterWorker(tmp_path / "w", data, etcd)
    try:
        member.start()
        wait_for(lambda: member.metric("dora_cluster_etcd_connected") == 1)
        yield member, etcd, data
    finally:
        member.stop()
        member.http.close()
        etcd.stop()


def requests(member: ClusterWorker) -> float:
    """The /v1 requests the worker has answered, by its /metrics."""
    lines = member.http.get("/metrics").text.splitlines()
    counts = [line for line in lines if line.startswith('dora_request_seconds_count{route="/v1/')]
    return sum(float(line.rsplit(" ", 1)[1]) for line in counts)


def test_pandas_and_polars_find_the_worker_through_etcd_storage_options(
    worker: tuple[ClusterWorker, LocalEtcd, Path],
) -> None:
    member, etcd, data = worker
    frame = pd.DataFrame({"id": range(1000), "name": [f"n{i}" for i in range(1000)]})
    frame.to_parquet(data / "t.parquet")
    url = f"dora://file://{data}/t.parquet"
    # The static list names no worker and the UFS fallback is off: only etcd leads anywhere.
    options = {
        "etcd_endpoints": [etcd.endpoint],
        "etcd_timeout": 1000,
        "workers": "127.0.0.1:9",
        "fallback_to_ufs": False,
        "skip_instance_cache": True,
    }
    before = requests(member)
    pd.testing.assert_frame_equal(pd.read_parquet(url, storage_options=options), frame)
    assert requests(member) > before
    text = {key: str(value) for key, value in options.items() if key != "skip_instance_cache"}
    text["dora.cluster.etcd.endpoints"] = text.pop("etcd_endpoints").strip("[']")
    before = requests(member)
    through = pl.read_parquet(url, use_pyarrow=True, storage_options=text)
    polars.testing.assert_frame_equal(through, pl.from_pandas(frame))
    assert requests(member) > before
    with pytest.raises(ValueError, match="did you mean 'etcd_endpoints'"):
        pd.read_parquet(url, storage_options={**options, "etcd_endpoint": etcd.endpoint})
