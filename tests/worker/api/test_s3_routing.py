"""The S3 endpoint's surface: which operation a request is, S3's error answers, buckets,
virtual-hosted addressing, the port it is served on, and the mount roots as a boundary."""

from collections.abc import Callable
from pathlib import Path
from xml.etree import ElementTree

import pytest

from config import ConfigError
from tests.worker.api.s3_support import BUCKET, PORT, S3Api, presigned, signed
from tests.worker.conftest import Api, open_service
from ufs.errors import StorageUnavailable
from worker.api.app import create_app
from worker.api.s3 import errors as s3_errors
from worker.api.s3.routing import on_port
from worker.common import errors as catalogue
from worker.service import WorkerService

NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"


def error(response: object) -> dict[str, str]:
    root = ElementTree.fromstring(response.content)  # type: ignore[attr-defined]
    assert root.tag == "Error"
    return {child.tag: child.text or "" for child in root}


def test_errors_are_s3_xml(s3: S3Api) -> None:
    answer = s3.get("/nobucket/key")
    assert answer.status_code == 404
    assert answer.headers["content-type"].startswith("application/xml")
    body = error(answer)
    assert body["Code"] == "NoSuchBucket" and body["Resource"] == "/nobucket/key"
    assert body["RequestId"] == answer.headers["x-amz-request-id"]
    missing = error(s3.get("/data/none"))
    assert missing["Code"] == "NoSuchKey"
    assert "file://" not in missing["Message"]  # the roots behind buckets are not shown


@pytest.mark.parametrize(
    ("method", "path", "operation"),
    [("GET", "/data/k?tagging", "GetObjectTagging"),
     ("PUT", "/data?versioning", "PutBucketVersioning"),
     ("PUT", "/newbucket", "CreateBucket"), ("DELETE", "/data", "DeleteBucket"),
     ("POST", "/data/k", "PostObject"), ("GET", "/data?versions", "GetBucketVersions"),
     ("GET", "/data/k?versionId=3", "GetObjectVersion"),
     ("DELETE", "/data/k?versionId=3", "DeleteObjectVersion")],
)  # fmt: skip
def test_other_operations_are_not_implemented(
    s3: S3Api, method: str, path: str, operation: str
) -> None:
    answer = s3.request(method, path)
    assert answer.status_code == 501
    body = error(answer)
    assert body["Code"] == "NotImplemented" and operation in body["Message"]


def test_buckets(s3: S3Api) -> None:
    root = ElementTree.fromstring(s3.get("/").content)
    assert [n.text for n in root.iter(NS + "Name")] == ["data"]
    assert s3.request("HEAD", "/data").status_code == 200
    assert s3.request("HEAD", "/other").status_code == 404
    location = s3.get("/data", params={"location": ""})
    assert location.status_code == 200 and b"LocationConstraint" in location.content


def test_s3_mount_roots_are_buckets(tmp_path: Path) -> None:
    service = open_service(tmp_path / "w2", f"s3://lake,s3://other/deep,file://{tmp_path}",
                           f"dora.worker.s3.buckets=scratch=file://{tmp_path}",
                           "dora.worker.s3.anonymous=true")  # fmt: skip
    try:
        client = S3Api(service)
        names = [n.text for n in ElementTree.fromstring(client.get("/").content).iter(NS + "Name")]
        assert names == ["lake", "scratch"]
        client.close()
    finally:
        service.close()


@pytest.mark.parametrize("pair", ["noequals", "UPPER=file:///x", "x=file:///etc"])
def test_bad_buckets_are_config_errors(
    make_service: Callable[..., WorkerService], pair: str
) -> None:
    with pytest.raises(ConfigError, match="dora.worker.s3.buckets"):
        create_app(make_service(f"dora.worker.s3.buckets={pair}"))


def test_key_pairs_must_pair_up(make_service: Callable[..., WorkerService]) -> None:
    service = make_service("dora.worker.s3.access.key.id=a,b", "dora.worker.s3.secret.access.key=x")
    with pytest.raises(ConfigError, match="dora.worker.s3.access.key.id"):
        create_app(service)


def test_traversal_reads_nothing(s3: S3Api, data_dir: Path) -> None:
    (data_dir.parent / "secret").write_bytes(b"outside")
    for path in ("/data/%2e%2e/secret", "/data/a/%252e%252e/%252e%252e/secret", "/data//secret"):
        answer = s3.get(path)
        assert answer.status_code in (400, 403, 404) and b"outside" not in answer.content, path


def test_virtual_hosted_style(s3_service: WorkerService, data_dir: Path) -> None:
    (data_dir / "k").write_bytes(b"virtual")
    client = S3Api(s3_service, domain="s3.local")
    try:
        assert client.get("/k", headers={"Host": f"data.s3.local:{PORT}"}).content == b"virtual"
        assert client.get("/data/k").content == b"virtual"  # path style still
    finally:
        client.close()


def test_served_on_its_port_only(s3_service: WorkerService, data_dir: Path) -> None:
    (data_dir / "k").write_bytes(b"x")
    main = Api(s3_service, app=on_port(create_app(s3_service), PORT))  # http://worker:80
    try:
        assert main.get("/_s3/data/k").status_code == 404
        assert main.get("/healthz").status_code == 200
    finally:
        main.close()


def test_worker_token_does_not_apply(
    make_service: Callable[..., WorkerService], data_dir: Path
) -> None:
    service = make_service("dora.worker.security.token=t0k", "dora.worker.s3.anonymous=true",
                           f"dora.worker.s3.buckets={BUCKET}=file://{data_dir}")  # fmt: skip
    (data_dir / "k").write_bytes(b"x")
    client = S3Api(service)
    try:
        assert client.get("/data/k").content == b"x"
    finally:
        client.close()


def test_anonymous_only_when_configured(
    make_service: Callable[..., WorkerService], data_dir: Path
) -> None:
    service = make_service(f"dora.worker.s3.buckets=data=file://{data_dir}")
    client = S3Api(service)
    try:
        answer = client.get("/data/k")
        assert answer.status_code == 403 and error(answer)["Code"] == "AccessDenied"
    finally:
        client.close()


def test_every_catalogue_error_has_an_s3_code() -> None:
    assert {kind.code for kind in catalogue.CATALOGUE} == set(s3_errors.BY_CATALOGUE)


def test_store_down_is_slow_down_with_retry_after() -> None:
    exc = StorageUnavailable("store down", retry_after=3)
    kind = catalogue.kind_of(exc)
    assert kind is not None
    slow = s3_errors.from_kind(kind, str(exc), catalogue.headers_for(exc))
    assert (slow.code, slow.status, slow.headers) == ("SlowDown", 503, {"Retry-After": "3"})


def test_request_metrics_per_operation(s3: S3Api, s3_service: WorkerService) -> None:
    s3.get("/data", params={"list-type": "2"})
    s3.get("/data/none")
    metrics = s3_service.metrics.render().decode()
    assert 'route="s3:ListObjectsV2"' in metrics and 'route="s3:GetObject"' in metrics


def test_access_log_names_the_key_never_the_signature(
    make_service: Callable[..., WorkerService], data_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    service = make_service(
        f"dora.worker.s3.buckets=data=file://{data_dir}", "dora.worker.http.access.log=true",
        "dora.worker.s3.access.key.id=first,second",
        "dora.worker.s3.secret.access.key=secret-one,secret-two",
    )  # fmt: skip
    (data_dir / "k").write_bytes(b"signed")
    client = S3Api(service)
    caplog.set_level("INFO", logger="worker.access")
    try:
        headers = signed("GET", "/data/k", "second", "secret-two")
        assert client.get("/data/k", headers=headers).content == b"signed"
        url = presigned("/data/k", "first", "secret-one")
        assert "X-Amz-Signature" in url
        assert client.get(url).content == b"signed"
    finally:
        client.close()
    lines = [r for r in caplog.records if r.name == "worker.access"]
    assert [vars(r)["caller"] for r in lines] == ["second", "first"]
    assert " caller=second " in lines[0].getMessage()
    for record in lines:
        assert "Signature" not in record.getMessage() and "signature" not in record.getMessage()


def test_audit_log_names_the_access_key(
    make_service: Callable[..., WorkerService], data_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    service = make_service(
        f"dora.worker.s3.buckets=data=file://{data_dir}", "dora.worker.audit.log=true",
        "dora.worker.s3.access.key.id=writer", "dora.worker.s3.secret.access.key=w-secret",
    )  # fmt: skip
    client = S3Api(service)
    caplog.set_level("INFO", logger="worker.audit")
    try:
        body = b"audited"
        answer = client.put("/data/a", body, headers=signed("PUT", "/data/a", "writer",
                                                            "w-secret", body))  # fmt: skip
        assert answer.status_code == 200, answer.text
        headers = signed("DELETE", "/data/a", "writer", "w-secret")
        assert client.request("DELETE", "/data/a", headers=headers).status_code == 204
    finally:
        client.close()
    lines = [r.getMessage() for r in caplog.records if r.name == "worker.audit"]
    assert [line.split("\t")[1] for line in lines] == ["ugi=writer", "ugi=writer"]
    assert ["cmd=create" in lines[0], "cmd=delete" in lines[1]] == [True, True]
