"""The operator's JSON (``/v1/overview``, ``/v1/history``, ``/v1/files/top``, ``/v1/jobs``,
``/v1/cluster``) and the console's files, in process over a local-directory UFS."""

import os
from pathlib import Path

from tests.worker.conftest import Api
from worker.service import WorkerService


def test_overview_names_the_roots_the_store_and_the_ufs_health(
    api: Api, data_dir: Path, service: WorkerService
) -> None:
    (data_dir / "f.bin").write_bytes(os.urandom(70_000))
    assert api.get("/v1/read", params={"path": f"file://{data_dir}/f.bin"}).status_code == 200
    o = api.get("/v1/overview").json()
    assert o["mount_roots"] == [f"file://{data_dir}"]
    assert o["readiness"]["ready"] is True
    assert o["security"] == {"token": False, "tls": False, "mutual_tls": False}
    assert o["feeds"]["sources"] == []
    assert o["feeds"]["gaps"] == 0
    assert o["ufs"]["reads"] >= 1
    assert o["ufs"]["latency_p50_ms"] > 0
    assert o["ufs"]["last_error"] is None
    [directory] = o["page_store"]["dirs"]
    assert directory["used_bytes"] == 70_000
    assert directory["files"] == 1
    assert o["page_store"]["files"] == 1
    assert o["page_store"]["pinned_bytes"] == 0  # what the console's Pinned card shows
    assert o["page_store"]["pin_limit_bytes"] == o["page_store"]["capacity_bytes"] // 2
    assert o["metadata"]["memory_statuses"] >= 1
    assert o["stats"]["bytes_from_ufs"] == 70_000


def test_top_files_show_reads_and_the_cached_fraction(api: Api, data_dir: Path) -> None:
    for name, size in (("a.bin", 1000), ("b.bin", 3000)):
        (data_dir / name).write_bytes(os.urandom(size))
    a, b = f"file://{data_dir}/a.bin", f"file://{data_dir}/b.bin"
    for _ in range(3):
        api.get("/v1/read", params={"path": b})
    api.get("/v1/read", params={"path": a, "offset": 0, "length": 10})
    files = api.get("/v1/files/top", params={"limit": 5}).json()["files"]
    assert [f["uri"] for f in files] == [b, a]
    assert files[0]["reads"] == 3
    assert files[0]["bytes_read"] == 9000
    assert files[0]["cached_fraction"] == 1.0
    bad = api.get("/v1/files/top", params={"limit": "0"})
    assert bad.status_code == 400
    assert "limit" in bad.json()["message"]


def test_history_samples_once_asked_and_jobs_list_every_job(
    api: Api, data_dir: Path, service: WorkerService
) -> None:
    samples = api.get("/v1/history").json()["samples"]
    assert samples and {"at", "bytes_from_cache", "page_evictions"} <= set(samples[0])
    (data_dir / "d").mkdir()
    (data_dir / "d" / "x").write_bytes(b"x" * 10)
    job = api.request(
        "POST", "/v1/load", params={"path": f"file://{data_dir}/d", "recursive": "true"}
    )
    service.loads.wait(job.json()["id"], 30)
    [listed] = api.get("/v1/jobs").json()["jobs"]
    assert listed["id"] == job.json()["id"]
    assert listed["state"] == "done"


def test_without_etcd_the_cluster_is_none(api: Api) -> None:
    assert api.get("/v1/cluster").json() == {"cluster": None, "etcd": [], "workers": []}


def test_the_console_is_served_and_unknown_files_are_not(api: Api) -> None:
    root = api.get("/", follow_redirects=False)
    assert (root.status_code, root.headers["location"]) == (302, "/ui/")
    page = api.get("/ui/")
    assert page.status_code == 200
    assert "text/html" in page.headers["content-type"]
    assert "default-src 'self'" in page.headers["content-security-policy"]
    assert api.get("/ui/console.js").text.startswith("// The console")
    assert api.get("/ui/../pyproject.toml").status_code == 404
    assert api.get("/ui/index.html").status_code == 404


def test_with_a_token_the_page_is_open_and_the_data_is_not(data_dir: Path, tmp_path: Path) -> None:
    from tests.worker.conftest import open_service

    service = open_service(
        tmp_path / "w", f"file://{data_dir}", "dora.worker.security.token=secret"
    )
    client = Api(service)
    try:
        assert client.get("/ui/").status_code == 200
        assert client.get("/ui/charts.js").status_code == 200
        assert client.get("/v1/overview").status_code == 401
        assert (
            client.get("/v1/overview", headers={"Authorization": "Bearer secret"}).json()[
                "security"
            ]["token"]
            is True
        )
    finally:
        client.close()
        service.close()


def test_overview_counts_s3_requests_per_operation(
    s3_service: WorkerService, data_dir: Path
) -> None:
    from tests.worker.api.s3_support import S3Api

    (data_dir / "k.bin").write_bytes(b"s3 bytes")
    s3 = S3Api(s3_service)
    api = Api(s3_service)
    try:
        assert api.get("/v1/overview").json()["s3"] == {"operations": [], "owner_requests": {}}
        for _ in range(3):
            assert s3.get("/data/k.bin").content == b"s3 bytes"
        assert s3.request("HEAD", "/data/k.bin").status_code == 200
        assert s3.get("/data/missing").status_code == 404
        traffic = api.get("/v1/overview").json()["s3"]
    finally:
        s3.close()
        api.close()
    by_name = {op["operation"]: op for op in traffic["operations"]}
    assert by_name["GetObject"]["requests"] == 4
    assert by_name["HeadObject"]["requests"] == 1
    assert by_name["GetObject"]["p50_ms"] > 0
    assert traffic["owner_requests"] == {}  # no cluster: every key is served here
