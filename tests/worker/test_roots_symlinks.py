"""Mount roots hold on every operation through the REST API, with real symlinks: a link
planted inside the root reaches nothing outside, links that stay inside keep working."""

from pathlib import Path

import httpx
import pytest

from tests.worker.conftest import Api
from worker.service import WorkerService

SECRET = b"secret outside the root"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    path = tmp_path / "outside"
    (path / "dir").mkdir(parents=True)
    (path / "secret.txt").write_bytes(SECRET)
    (path / "dir" / "f.txt").write_bytes(SECRET)
    return path


@pytest.fixture
def links(data_dir: Path, outside: Path) -> Path:
    """Links out of the root of every kind, and links that stay inside."""
    (data_dir / "real" / "sub").mkdir(parents=True)
    (data_dir / "real" / "file.txt").write_bytes(b"inside")
    for name, target in {
        "passwd": outside / "secret.txt",
        "outdir": outside / "dir",
        "up": Path("../outside"),
        "sneaky": Path("real/../../outside/secret.txt"),
        "dangling": outside / "not-yet",
        "inlink": Path("real/file.txt"),
        "indir": data_dir / "real",
        "climb": Path("real/sub/../file.txt"),
    }.items():
        (data_dir / name).symlink_to(target)
    return data_dir


def at(data_dir: Path, rel: str) -> str:
    return f"file://{data_dir}/{rel}"


def refused(answer: httpx.Response) -> bool:
    return (answer.status_code, answer.json()["error"]) == (403, "OutsideMountRoots")


def untouched(outside: Path) -> bool:
    return (
        (outside / "secret.txt").read_bytes() == SECRET
        and (outside / "dir" / "f.txt").read_bytes() == SECRET
        and sorted(p.name for p in outside.rglob("*")) == ["dir", "f.txt", "secret.txt"]
    )


ESCAPES = ["passwd", "outdir", "outdir/f.txt", "up/secret.txt", "sneaky", "dangling"]


@pytest.mark.parametrize("rel", ESCAPES)
def test_status_and_read_refuse_links_out(api: Api, links: Path, rel: str) -> None:
    assert refused(api.get("/v1/status", params={"path": at(links, rel)}))
    answer = api.get("/v1/read", params={"path": at(links, rel)})
    assert refused(answer)
    assert SECRET not in answer.content


def test_links_inside_are_served(api: Api, links: Path) -> None:
    for rel in ("inlink", "climb", "indir/file.txt"):
        assert api.get("/v1/read", params={"path": at(links, rel)}).content == b"inside"
    listed = api.get("/v1/list", params={"path": at(links, "indir")}).json()["entries"]
    assert [e["name"] for e in listed] == ["file.txt", "sub"]


def test_listing_leaves_out_entries_that_lead_outside(api: Api, links: Path) -> None:
    entries = api.get("/v1/list", params={"path": at(links, "")}).json()["entries"]
    assert [e["name"] for e in entries] == ["climb", "indir", "inlink", "real"]
    assert refused(api.get("/v1/list", params={"path": at(links, "outdir")}))
    assert refused(api.get("/v1/list", params={"path": at(links, "up")}))


@pytest.mark.parametrize("rel", ["passwd", "outdir/new.txt", "dangling", "up/x/y.txt"])
def test_write_refuses_links_out(api: Api, links: Path, outside: Path, rel: str) -> None:
    assert refused(api.request("PUT", "/v1/write", params={"path": at(links, rel)}, content=b"x"))
    assert untouched(outside)


def test_write_through_a_link_inside_writes_its_target(api: Api, links: Path) -> None:
    answer = api.request("PUT", "/v1/write", params={"path": at(links, "inlink")}, content=b"new")
    assert answer.status_code == 200
    assert (links / "real" / "file.txt").read_bytes() == b"new"


@pytest.mark.parametrize(
    ("src", "dst"),
    [("passwd", "real/stolen"), ("outdir", "real/stolen"), ("real/file.txt", "outdir/moved")],
)
def test_rename_refuses_links_out_at_either_end(
    api: Api, links: Path, outside: Path, src: str, dst: str
) -> None:
    params = {"src": at(links, src), "dst": at(links, dst)}
    assert refused(api.request("POST", "/v1/rename", params=params))
    assert untouched(outside)
    assert (links / "real" / "file.txt").read_bytes() == b"inside"
    assert not (links / "real" / "stolen").exists()


@pytest.mark.parametrize("rel", ["outdir/newdir", "up/newdir", "dangling"])
def test_mkdir_refuses_links_out(api: Api, links: Path, outside: Path, rel: str) -> None:
    assert refused(api.request("POST", "/v1/mkdir", params={"path": at(links, rel)}))
    assert untouched(outside)


@pytest.mark.parametrize("rel", ["outdir/f.txt", "up/secret.txt", "sneaky"])
def test_delete_refuses_links_out(api: Api, links: Path, outside: Path, rel: str) -> None:
    params = {"path": at(links, rel), "recursive": "true"}
    assert refused(api.request("DELETE", "/v1/delete", params=params))
    assert untouched(outside)


def test_recursive_delete_never_follows_a_link_out(api: Api, links: Path, outside: Path) -> None:
    (links / "box").mkdir()
    (links / "box" / "escape").symlink_to(outside / "dir")
    (links / "box" / "own.txt").write_bytes(b"mine")
    params = {"path": at(links, "box"), "recursive": "true"}
    assert api.request("DELETE", "/v1/delete", params=params).status_code == 200
    assert not (links / "box").exists()
    assert untouched(outside)


def test_invalidate_refuses_links_out(api: Api, links: Path) -> None:
    assert refused(api.request("POST", "/v1/invalidate", params={"path": at(links, "passwd")}))
    params = {"path": at(links, "outdir"), "recursive": "true"}
    assert refused(api.request("POST", "/v1/invalidate", params=params))


def test_load_refuses_links_out_and_skips_them_in_a_prefix(
    api: Api, service: WorkerService, links: Path
) -> None:
    assert refused(api.request("POST", "/v1/load", params={"path": at(links, "passwd")}))
    assert refused(api.request("POST", "/v1/load", params={"path": at(links, "outdir")}))
    job = api.request("POST", "/v1/load", params={"path": at(links, ""), "recursive": "true"})
    done = service.loads.wait(job.json()["id"], timeout=60)
    assert done is not None
    progress = done.to_dict()
    assert (progress["state"], progress["files_failed"]) == ("done", 0)
    # real/file.txt three times over (itself, through inlink and climb) and once via indir.
    assert progress["files_total"] == 4
    assert progress["bytes_total"] == 4 * len(b"inside")


def test_a_link_repointed_outside_is_refused_despite_the_cache(
    api: Api, links: Path, outside: Path
) -> None:
    assert api.get("/v1/read", params={"path": at(links, "inlink")}).content == b"inside"
    (links / "inlink").unlink()
    (links / "inlink").symlink_to(outside / "secret.txt")
    answer = api.get("/v1/read", params={"path": at(links, "inlink"), "sync_interval": "-1"})
    assert refused(answer)
    assert SECRET not in answer.content
