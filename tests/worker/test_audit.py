"""The audit log of mutations (``worker.audit``): one line per mutation through any surface, with
the caller, the client's address, the operation, source and destination, and whether it was
allowed (the reason when not); nothing while ``dora.worker.audit.log`` is off."""

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.worker.conftest import Api
from worker.service import WorkerService

Lines = Callable[[], list[str]]


@pytest.fixture
def audited(caplog: pytest.LogCaptureFixture) -> Lines:
    caplog.set_level("INFO", logger="worker.audit")
    return lambda: [r.getMessage() for r in caplog.records if r.name == "worker.audit"]


@pytest.fixture
def api(make_service: Callable[..., WorkerService]) -> Iterator[Api]:
    client = Api(make_service("dora.worker.audit.log=true"))
    yield client
    client.close()


def line(allowed: bool, ugi: str, cmd: str, src: str, dst: str = "null") -> str:
    # httpx's ASGI transport presents the client as 127.0.0.1.
    fields = (f"allowed={str(allowed).lower()}", f"ugi={ugi}", "ip=/127.0.0.1", f"cmd={cmd}")
    return "\t".join((*fields, f"src={src}", f"dst={dst}"))


def test_rest_mutations_are_logged_allowed_or_refused_with_the_reason(
    api: Api, data_dir: Path, audited: Lines
) -> None:
    root = f"file://{data_dir}"
    assert api.request("PUT", "/v1/write", params={"path": f"{root}/a"}, content=b"1").is_success
    assert api.request("POST", "/v1/mkdir", params={"path": f"{root}/d"}).is_success
    moved = api.request("POST", "/v1/rename", params={"src": f"{root}/a", "dst": f"{root}/d/a"})
    assert moved.is_success
    assert api.request("POST", "/v1/invalidate", params={"path": f"{root}/d/a"}).is_success
    assert api.request("DELETE", "/v1/delete", params={"path": f"{root}/d/a"}).is_success
    outside = api.request("PUT", "/v1/write", params={"path": "file:///etc/x"}, content=b"1")
    missing = api.request("DELETE", "/v1/delete", params={"path": f"{root}/gone"})
    assert (outside.status_code, missing.status_code) == (403, 404)
    *allowed, refused, failed = audited()
    assert allowed == [
        line(True, "-", "create", f"{root}/a"),
        line(True, "-", "mkdirs", f"{root}/d"),
        line(True, "-", "rename", f"{root}/a", f"{root}/d/a"),
        line(True, "-", "invalidate", f"{root}/d/a"),
        line(True, "-", "delete", f"{root}/d/a"),
    ]
    assert refused.startswith(line(False, "-", "create", "file:///etc/x") + "\t")
    assert refused.endswith("reason=OutsideMountRoots: path 'file:///etc/x' is outside the "
                            f"mount roots ({root})")  # fmt: skip
    assert failed.startswith(line(False, "-", "delete", f"{root}/gone") + "\treason=NotFound: ")


def test_webhdfs_names_its_user_and_the_user_it_acts_for(
    api: Api, data_dir: Path, audited: Lines
) -> None:
    root, base = f"file://{data_dir}", f"/webhdfs/v1/file{data_dir}"
    create = {"op": "CREATE", "user.name": "alice"}
    redirect = api.request("PUT", f"{base}/f", params=create)
    assert redirect.status_code == 307 and audited() == []  # checked, not yet written
    written = api.request("PUT", f"{base}/f", params={**create, "data": "true"}, content=b"x")
    assert written.status_code == 201
    rename = {"op": "RENAME", "destination": f"/file{data_dir}/g", "User.Name": "bob"}
    assert api.request("PUT", f"{base}/f", params=rename).json() == {"boolean": True}
    delete = {"op": "DELETE", "user.name": "bob", "doas": "alice"}
    assert api.request("DELETE", f"{base}/g", params=delete).json() == {"boolean": True}
    refused = api.request("PUT", "/webhdfs/v1/file/etc/x", params=create)
    assert refused.status_code == 403
    assert audited()[:3] == [
        line(True, "alice", "create", f"{root}/f"),
        line(True, "bob", "rename", f"{root}/f", f"{root}/g"),
        line(True, "alice via bob", "delete", f"{root}/g"),
    ]
    assert audited()[3].startswith(line(False, "alice", "create", "file:///etc/x") + "\t")


def test_nothing_is_logged_while_the_key_is_off(
    make_service: Callable[..., WorkerService], data_dir: Path, audited: Lines
) -> None:
    api = Api(make_service())
    try:
        written = api.request(
            "PUT", "/v1/write", params={"path": f"file://{data_dir}/a"}, content=b"1"
        )
    finally:
        api.close()
    assert written.is_success and audited() == []
