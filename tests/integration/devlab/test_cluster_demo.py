"""``dora demo --workers 2``'s cluster part: two worker processes and a local etcd."""

from pathlib import Path

import pytest

from worker.devlab.demo.cluster import run_cluster_demo

pytestmark = pytest.mark.integration


def test_two_workers_serve_a_change_made_through_either(tmp_path: Path) -> None:
    lines: list[str] = []
    assert run_cluster_demo(tmp_path, 2, lines.append)
    text = "\n".join(lines)
    assert "cluster: 2 workers joined through etcd" in text
    assert "'version 2'" in text and "'version 1'" not in text
    assert "2 of 2 workers online" in text
    assert list(tmp_path.iterdir()) == []  # everything it made is gone
