"""Three worker hosts, an etcd host and a SeaweedFS host, each in its own network namespace
(issue 24): membership as etcd lists it names each worker by its host's address, clients on
every host route every file to the same owner, a read from one host of a file another owns is
served by that owner, WebHDFS block locations name the owner's host, and a host cannot open
another host's page files. Every read is compared with the bytes S3 holds."""

from pathlib import Path

import httpx
import pytest

from tests.integration.lab.lab_support import (
    cluster_ls,
    owners_seen_from,
    put_files,
    read_across_hosts,
    read_op,
)
from worker.devlab.lab.lab import Lab

pytestmark = [pytest.mark.integration, pytest.mark.slow]
HOSTS = ("w1", "w2", "w3")


@pytest.fixture(scope="module")
def files(lab: Lab) -> dict[str, str]:
    return put_files(lab, "routing", 12)


def test_cluster_ls_lists_three_workers_at_their_host_addresses(lab: Lab) -> None:
    listed = cluster_ls(lab, "w2")
    assert listed == {f"10.203.{lab.network.subnet}.{octet}:28080": True for octet in (11, 12, 13)}
    assert sorted(listed) == sorted(lab.addresses)


def test_clients_on_every_host_compute_the_same_owner(lab: Lab) -> None:
    uris = [f"s3://lab/routing/any-{index}.parquet" for index in range(60)]
    seen = [owners_seen_from(lab, host, uris) for host in HOSTS]
    assert seen[0] == seen[1] == seen[2]
    assert set(seen[0].values()) == set(lab.addresses)  # each worker owns some of them


def test_a_read_from_one_host_is_served_by_the_owner_on_another(
    lab: Lab, files: dict[str, str]
) -> None:
    read_across_hosts(lab, "w1", files)


def test_webhdfs_block_locations_name_the_owner_host(lab: Lab, files: dict[str, str]) -> None:
    owners = owners_seen_from(lab, "w3", list(files))
    for uri, owner in owners.items():
        for asked in lab.workers:
            answer = asked.http.get(
                "/webhdfs/v1/" + uri.replace("s3://", "s3/"),
                params={"op": "GETFILEBLOCKLOCATIONS"},
            )
            [block] = answer.json()["BlockLocations"]["BlockLocation"]
            assert block["hosts"] == [owner.split(":")[0]]
            assert block["names"] == [owner]


def test_a_host_cannot_open_another_host_page_files(lab: Lab, files: dict[str, str]) -> None:
    uri = next(iter(files))
    owner = owners_seen_from(lab, "w1", [uri])[uri]
    host = lab.worker_at(owner).host.name
    direct, through_fsspec = lab.probe(host, read_op(uri, owner), {"op": "cat", "uri": uri})
    assert direct["sha256"] == through_fsspec["sha256"] == files[uri]
    pages = httpx.get(
        f"http://{owner}/v1/locate", params={"path": uri, "sync_interval": "-1"}
    ).json()
    page_file = pages["pages"][0][1]
    assert lab.run(host, ["test", "-r", page_file]).returncode == 0
    for other in HOSTS:
        if other != host:
            assert lab.run(other, ["test", "-e", page_file]).returncode == 1
    assert not Path(page_file).exists()  # nor here, outside every lab host
