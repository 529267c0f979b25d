"""TTL: a file under a ``ttl`` rule is freed that long after it was first looked up, by the
rules in force at the sweep; on a real service its pages and metadata go, the UFS stays."""

import time
from collections.abc import Callable
from pathlib import Path

from worker.rules.live import Rules
from worker.rules.ruleset import Defaults
from worker.rules.ttl import Expiry
from worker.service import WorkerService


def _expiry(tmp_path: Path, text: str) -> tuple[Expiry, Rules, list[float], list[str]]:
    """An expiry over the rules of a file with ``text``, a clock at ``now[0]``, and the URIs
    it freed."""
    path = tmp_path / "rules"
    path.write_text(text)
    rules = Rules((), Defaults(), path, clock=lambda: 0.0)
    now: list[float] = [0.0]
    freed: list[str] = []
    return Expiry(rules, freed.append, clock=lambda: now[0]), rules, now, freed


def test_a_file_is_freed_its_ttl_after_its_first_lookup(tmp_path: Path) -> None:
    expiry, _, now, freed = _expiry(tmp_path, "s3://lake/tmp/** ttl=1min\n")
    expiry.loaded("s3://lake/tmp/a", 60_000)
    now[0] = 30.0
    expiry.loaded("s3://lake/tmp/a", 60_000)  # a later lookup does not restart its clock
    expiry.loaded("s3://lake/tmp/b", 60_000)
    expiry.loaded("s3://lake/other", None)  # no TTL: not recorded
    assert len(expiry) == 2
    now[0] = 59.9
    assert expiry.sweep() == []
    now[0] = 60.0
    assert expiry.sweep() == ["s3://lake/tmp/a"]
    assert freed == ["s3://lake/tmp/a"]
    expiry.loaded("s3://lake/tmp/a", 60_000)  # looked up again: a new clock
    now[0] = 90.0
    assert expiry.sweep() == ["s3://lake/tmp/b"]
    assert len(expiry) == 1


def test_the_rules_in_force_at_the_sweep_decide(tmp_path: Path) -> None:
    expiry, rules, now, freed = _expiry(tmp_path, "s3://lake/** ttl=1min\n")
    expiry.loaded("s3://lake/a", 60_000)
    expiry.loaded("s3://lake/keep/b", 60_000)
    (tmp_path / "rules").write_text("s3://lake/keep/** max-age=0\ns3://lake/a ttl=2min\n")
    assert rules.reload()
    now[0] = 60.0
    assert expiry.sweep() == []  # a's TTL is now 2min; b has none any more: forgotten
    assert len(expiry) == 1
    now[0] = 120.0
    assert expiry.sweep() == ["s3://lake/a"]
    assert freed == ["s3://lake/a"]


def test_a_service_frees_pages_and_metadata_and_counts_it(
    make_service: Callable[..., WorkerService], data_dir: Path, tmp_path: Path
) -> None:
    rules = tmp_path / "rules"
    rules.write_text(f"file://{data_dir}/tmp/** ttl=1h\n")
    (data_dir / "tmp").mkdir()
    (data_dir / "tmp" / "f").write_bytes(b"x" * 1000)
    (data_dir / "g").write_bytes(b"y" * 1000)
    service = make_service(f"dora.worker.path.rules.file={rules}")
    freed, kept = f"file://{data_dir}/tmp/f", f"file://{data_dir}/g"
    statuses = []
    for uri in (freed, kept):
        call = service.request(uri)
        assert len(b"".join(service.read(call).chunks)) == 1000
        statuses.append(service.status(call))
    assert [service.describe(status)["cached_bytes"] for status in statuses] == [1000, 1000]
    assert len(service.expiry) == 1
    assert service.expiry.sweep() == []  # not an hour yet
    assert service.expiry.sweep(now=time.time() + 3600) == [freed]
    assert service.meta.reads.peek([freed, kept]) == [None, statuses[1]]
    assert [service.describe(status)["cached_bytes"] for status in statuses] == [0, 1000]
    assert service.metrics.registry.get_sample_value("dora_ttl_frees_total") == 1
    assert (data_dir / "tmp" / "f").exists()  # freed from the cache, not from the UFS
