"""``dora cluster ls`` against a real etcd, and its answers when there is no cluster."""

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from worker.cli.main import main
from worker.cluster.etcd import Etcd
from worker.cluster.layout import WorkerInfo
from worker.cluster.members import Registration
from worker.devlab.local.etcd import LocalEtcd
from worker.devlab.local.s3 import free_port


@pytest.fixture(scope="module")
def etcd_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalEtcd]:
    server = LocalEtcd(tmp_path_factory.mktemp("etcd")).start()
    yield server
    server.stop()


def test_lists_workers_as_a_table_and_as_json(
    etcd_server: LocalEtcd, capsys: pytest.CaptureFixture[str]
) -> None:
    etcd = Etcd([etcd_server.endpoint], 2.0)
    member = Registration(etcd, "ls", WorkerInfo("10.0.0.7", 28080, 0, 1 << 30), 30, lambda: 0)
    member.start()
    try:
        define = f"-Ddora.cluster.etcd.endpoints={etcd_server.endpoint}"
        assert main(["cluster", "ls", define, "-Ddora.cluster.name=ls"]) == 0
        table = capsys.readouterr().out
        assert "cluster ls: 1 of 1 workers online" in table
        assert "10.0.0.7:28080" in table and "ONLINE" in table and "1GB" in table
        assert main(["cluster", "ls", "--json", define, "-Ddora.cluster.name=ls"]) == 0
        listed = json.loads(capsys.readouterr().out)
        assert listed["workers"][0]["address"] == "10.0.0.7:28080"
        assert listed["workers"][0]["online"] is True
    finally:
        member.close()


def test_without_a_cluster_it_says_so(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["cluster", "ls"]) == 2
    assert "dora.cluster.etcd.endpoints is not set" in capsys.readouterr().err


def test_an_unreachable_etcd_is_one_line_and_status_1(capsys: pytest.CaptureFixture[str]) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    assert (
        main(
            [
                "cluster",
                "ls",
                f"-Ddora.cluster.etcd.endpoints={dead}",
                "-Ddora.cluster.etcd.timeout=500ms",
            ]
        )
        == 1
    )
    err = capsys.readouterr().err
    assert err.startswith("dora: etcd") and "no endpoint answered" in err
