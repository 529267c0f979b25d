"""Load jobs' settings: a local UFS has a parallelism and a fill batch of its own."""

from config import load_config
from worker.keys import build_registry
from worker.load.options import FILL_BATCH, LOCAL_FILL_BATCH, LoadOptions


def options(*defines: str) -> LoadOptions:
    return LoadOptions.from_config(load_config(build_registry(), environ={}, defines=list(defines)))


def test_a_job_on_a_local_ufs_gets_the_local_parallelism() -> None:
    local = options("dora.worker.load.parallelism=6", "dora.worker.load.parallelism.local=3")
    assert local.parallelism_for("file:///data/part=1") == 3
    assert local.parallelism_for("s3://bucket/part=1") == 6


def test_the_defaults_keep_a_local_ufs_to_one_thread() -> None:
    defaults = options()
    assert (defaults.parallelism_for("file:///data"), defaults.parallelism_for("s3://b")) == (1, 8)


def test_fills_on_a_local_ufs_take_larger_batches() -> None:
    defaults = options()
    assert defaults.fill_batch_for("file:///data") == LOCAL_FILL_BATCH > FILL_BATCH
    assert defaults.fill_batch_for("s3://bucket/data") == FILL_BATCH
