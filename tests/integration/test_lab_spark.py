"""The demo's pipeline on Spark standalone across the lab's three worker hosts (issue 24,
``dora demo --hosts 3``): a Master and a Worker per host started inside the namespaces, the
driver on w1, Spark's own Parquet reader over ``webhdfs://`` through the workers. Every answer
matches the reference read straight from the files, the input tasks are counted by Spark's
locality level from its REST API, and the bytes each worker served are split by the host they
went to."""

from pathlib import Path

import pytest

from worker.demo.hosts import HostsReport, run_hosts_demo
from worker.demo.report import Progress
from worker.demo.run import DemoOptions
from worker.demo.spec import DatasetSpec
from worker.lab.netns import LabUnavailable, unavailable_reason

# The demo takes a few minutes on shared cores: one test (xdist spreads a module's tests over
# its processes, and each would run the demo again), with the time it needs.
pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(600)]
FILES = 6


def run_demo(tmp_path: Path) -> HostsReport:
    reason = unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    spec = DatasetSpec(files=FILES, rows_per_file=5000)
    options = DemoOptions(spec=spec, work_dir=tmp_path)
    try:
        # Without the pass-through copy: the one-host demo's tests cover it, and it costs time.
        return run_hosts_demo(options, 3, Progress(), passthrough=False)
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
