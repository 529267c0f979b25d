"""The demo's pipeline on Spark standalone across the lab's three worker hosts (issue 24,
``dora demo --hosts 3``): a Master and a Worker per host started inside the namespaces, the
driver on w1, Spark's own Parquet reader over ``webhdfs://`` through the workers. Every answer
matches the reference read straight from the files, the input tasks are counted by Spark's
locality level from its REST API, and the bytes each worker served are split by the host they
went to. Then the same job loses a worker host mid-run, and the host comes back."""

import contextlib
import io
import time
from pathlib import Path
from typing import Any

import httpx
import pyarrow.parquet as pq
import pytest

from tests.integration.lab.lab_support import online, read_op, ufs_digest, wait_for
from worker.devlab.demo import pipeline
from worker.devlab.demo.dataset import data_files, ensure_dataset, trips
from worker.devlab.demo.hosts import HostsReport, run_hosts_demo
from worker.devlab.demo.report import DemoProgress
from worker.devlab.demo.run import DemoOptions
from worker.devlab.demo.spec import DatasetSpec
from worker.devlab.lab.lab import Lab
from worker.devlab.lab.netns import LabUnavailable, unavailable_reason
from worker.devlab.lab.sparklab import LOSS_SETTINGS, SparkApi, start_spark_lab

# The demo takes a few minutes on shared cores, with the time it needs; the host-loss test
# runs on the lab of its test process (the ``lab`` fixture).
pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(600)]
FILES = 6
# Four files per host on average, of about 1.5 s of decoding each (the first task of an
# executor takes seconds more): the lost host has tasks to lose, one after another.
LOSS_FILES = 12
LOSS_ROWS = 150_000
# Each host's executor waits for its own files (Spark's default gives up after 3 s), so that
# the host to lose runs its files one after another and a task starts there mid-job.
WAIT_FOR_LOCALITY = {"spark.locality.wait": "60s"}


def run_demo(tmp_path: Path) -> HostsReport:
    reason = unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    spec = DatasetSpec(files=FILES, rows_per_file=5000)
    options = DemoOptions(spec=spec, work_dir=tmp_path)
    try:
        # Without the pass-through copy: the one-host demo's tests cover it, and it costs time.
        return run_hosts_demo(options, 3, DemoProgress(), passthrough=False)
    except LabUnavailable as exc:
        pytest.skip(str(exc))


def test_the_pipeline_on_spark_standalone_across_three_hosts(tmp_path: Path) -> None:
    report = run_demo(tmp_path)
    runs = [(r.run, r.contender) for r in report.results]
    assert runs == [(run, "native (webhdfs)") for run in ("cold", "warm", "changed")]
    assert all(r.matches for r in report.results)
    cold, warm, changed = report.results
    assert cold.checksum != changed.checksum  # the change was seen
    # The caches: the cold run fills them, the warm run reads only them, the changed run
    # fetches the changed file alone.
    assert cold.bytes_from_ufs > 0
    assert warm.bytes_from_ufs == 0 and warm.bytes_from_cache > 0
    assert 0 < changed.bytes_from_ufs < cold.bytes_from_ufs
    for _, _, counts in report.locality:
        assert sum(counts.values()) == FILES  # one file per task, each counted once
    # Block locations name the owner's host, which runs an executor: Spark schedules there.
    assert sum(counts["NODE_LOCAL"] for _, _, counts in report.locality) > 0
    assert len(report.served) == 3
    own = sum(own for own, _ in report.served.values())
    total = sum(own + other for own, other in report.served.values())
    assert total > 0
    # Locality is real, not nominal: a task Spark ran on its file's host read from that host's
    # worker (OPEN goes to the owner), so the share of bytes served to the same host follows
    # the share of node-local tasks (the files are of one size). Issue 24's target is 90% of
    # the bytes with every task node-local; a loaded machine lets Spark give up waiting for
    # locality now and then, which moves both shares alike.
    tasks = sum(sum(c.values()) for _, _, c in report.locality)
    local = sum(c["NODE_LOCAL"] + c.get("PROCESS_LOCAL", 0) for _, _, c in report.locality)
    assert own >= (local / tasks - 0.1) * total, (own, total, local, tasks)


def fresh_task(api: SparkApi, host: str) -> dict[str, Any]:
    """Wait (on Spark's REST API, not a clock) until a task runs on ``host`` with most of its
    time ahead of it."""
    deadline = time.monotonic() + 180
    while (task := api.fresh_task_on(host)) is None:
        assert time.monotonic() < deadline, f"no task ran on {host} while the job ran"
        time.sleep(0.05)
    return task


def assert_rerun(api: SparkApi, task: dict[str, Any], lost: str) -> None:
    """``task`` (its executor on host ``lost``) failed, and another attempt of it succeeded
    on another host."""
    same = (task["stageId"], task["index"])
    attempts = [t for t in api.tasks() if (t["stageId"], t["index"]) == same]
    assert any(t["taskId"] == task["taskId"] and t["status"] == "FAILED" for t in attempts), (
        attempts
    )
    assert any(t["status"] == "SUCCESS" and t["host"] != lost for t in attempts), attempts


def busiest(lab: Lab, uris: list[str]) -> tuple[str, list[str]]:
    """Of w2 and w3, the host whose worker owns more of ``uris``, and those it owns."""
    [answer] = lab.probe("w1", {"op": "owners", "uris": uris})
    owners: dict[str, str] = answer["owners"]  # type: ignore[assignment]
    owned = {h: [u for u in uris if owners[u] == lab.worker(h).address] for h in ("w2", "w3")}
    host = max(owned, key=lambda h: len(owned[h]))
    return host, owned[host]


def overwrite(lab: Lab, host: str, uri: str, table: Any) -> None:
    """Write ``table`` as Parquet to ``uri`` through the worker on ``host`` (a feed event)."""
    out = io.BytesIO()
    pq.write_table(table, out, compression="snappy")
    url = f"http://{lab.worker(host).address}/v1/write"
    written = httpx.put(url, params={"path": uri}, content=out.getvalue(), timeout=60)
    assert written.status_code == 200, written.text


def test_a_host_lost_mid_job_the_job_completes_and_the_host_comes_back_fresh(
    lab: Lab, tmp_path: Path
) -> None:
    """Issue 24, item 3: a worker host's link drops while one of its tasks runs. Spark reruns
    the lost task elsewhere and the job's answer matches the files; the ring drops the host;
    a file of its changes meanwhile (written through another worker); back, it rejoins, has
    caught up with the feed and serves its files, the changed one new, to direct and routed
    reads and to the next job. The host is not w1, whose loss the job cannot survive (the
    Master, the driver and the worker the URLs name run there)."""
    spec = DatasetSpec(files=LOSS_FILES, rows_per_file=LOSS_ROWS)
    paths = data_files(ensure_dataset(spec, tmp_path, lambda done, total: None))
    tables = [pq.read_table(path, columns=list(pipeline.NEEDED)) for path in paths]
    with contextlib.ExitStack() as cleanup:
        spark = start_spark_lab(lab, paths[0], cleanup, LOSS_SETTINGS | WAIT_FOR_LOCALITY)
        uris = spark.upload(paths, "midjob")
        victim, theirs = busiest(lab, uris)
        assert len(theirs) >= 2, f"w2 and w3 own one file or none of {len(uris)}"
        lost, changed = lab.worker(victim), theirs[0]
        [cached] = lab.probe("w2", read_op(changed, lost.address))  # what it would serve stale
        assert cached["sha256"] == ufs_digest(lab, changed)
        api = spark.api()
        cleanup.callback(api.close)
        spark.driver.submit(spark.url("midjob"))
        task = fresh_task(api, lost.host.address)
        lab.network.link(victim, up=False)
        try:
            wait_for(lambda: lost.address not in online(lab, "w1"))  # its lease lapsed
            result = spark.driver.result()
            assert result["checksum"] == pipeline.checksum(pipeline.arrow_aggregate(tables))
            assert_rerun(api, task, lost.host.address)
            index = uris.index(changed)
            overwrite(lab, "w2" if victim == "w3" else "w3", changed, trips(spec, index, 1))
            tables[index] = trips(spec, index, 1).select(list(pipeline.NEEDED))
        finally:
            lab.network.link(victim, up=True)
        wait_for(lambda: lost.address in online(lab, "w1"))
        # Straight to it at sync interval -1 (it never re-checks on its own) and routed by the
        # ring: what it cached before must have gone with the feed it caught up from.
        now = {uri: ufs_digest(lab, uri) for uri in theirs}
        assert now[changed] != cached["sha256"]
        direct = lab.probe("w1", *(read_op(uri, lost.address) for uri in theirs))
        routed = lab.probe("w1", *map(read_op, theirs))
        for uri, straight, through in zip(theirs, direct, routed, strict=True):
            assert straight["sha256"] == through["sha256"] == now[uri]
            assert through["worker"] == lost.address
        served = lost.served()
        again = spark.driver.query(spark.url("midjob"))
        assert again["checksum"] == pipeline.checksum(pipeline.arrow_aggregate(tables))
        assert lost.served() > served  # it serves its files again
