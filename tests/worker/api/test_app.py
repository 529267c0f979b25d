"""The app assembly: one token check over every path but the probes, errors in the shape of
the surface that owns the path, unknown paths and methods answered in that shape too."""

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import parse_qs

import pytest
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Scope

from tests.worker.conftest import Api
from worker.api.app import SURFACES, create_app
from worker.api.surface import Route, Surface
from worker.common.errors import ErrorKind, NotFound
from worker.service import WorkerService


def uri(data_dir: Path, name: str) -> str:
    return f"file://{data_dir}/{name}"


@pytest.fixture
def guarded(make_service: Callable[..., WorkerService]) -> Iterator[dict[str, Api]]:
    service = make_service("dora.worker.security.token=s3cret")
    clients = {
        "anonymous": Api(service),
        "wrong": Api(service, {"Authorization": "Bearer nope"}),
        "right": Api(service, {"Authorization": "Bearer s3cret"}),
    }
    yield clients
    for client in clients.values():
        client.close()


def test_token_guards_everything_but_probes(guarded: dict[str, Api], data_dir: Path) -> None:
    (data_dir / "t").write_bytes(b"t")
    path = {"path": uri(data_dir, "t")}
    anonymous, right = guarded["anonymous"], guarded["right"]
    assert anonymous.get("/healthz").status_code == 200
    assert anonymous.get("/readyz").status_code == 200
    for client in (anonymous, guarded["wrong"]):
        for url in ("/v1/status", "/metrics", "/openapi.json", "/docs", "/no/such/route"):
            answer = client.get(url, params=path)
            assert (answer.status_code, answer.json()["error"]) == (401, "Unauthorized"), url
            assert answer.headers["www-authenticate"] == "Bearer"
    assert right.get("/v1/status", params=path).status_code == 200
    assert right.get("/openapi.json").status_code == 200


def test_unknown_routes_and_methods_answer_in_the_error_shape(api: Api) -> None:
    missing = api.get("/v2/read")
    assert missing.status_code == 404
    assert missing.json() == {"error": "NoSuchRoute", "message": "GET /v2/read: no such route"}
    wrong_method = api.request("POST", "/v1/read")
    assert wrong_method.status_code == 405
    assert wrong_method.json()["error"] == "MethodNotAllowed"
    assert "GET" in wrong_method.json()["message"]
    assert wrong_method.headers["allow"] == "GET"


def _plain(kind: ErrorKind, message: str, headers: dict[str, str]) -> Response:
    return Response(f"{kind.hadoop_name}: {message}", kind.status, headers=headers or None)


async def _missing(service: WorkerService, request: Request) -> Response:
    raise NotFound("no such thing")


async def _buggy(service: WorkerService, request: Request) -> Response:
    raise KeyError("internal detail")


def _query_token(scope: Scope) -> bytes | None:
    found = parse_qs(scope["query_string"].decode()).get("delegation")
    return found[0].encode() if found else None


OTHER = Surface(
    "other",
    "/other/",
    (Route("GET", "/other/missing", _missing), Route("GET", "/other/buggy", _buggy)),
    _plain,
    credential=_query_token,
    credential_hint="delegation=<token>",
)


def test_each_surface_answers_errors_in_its_own_shape(service: WorkerService) -> None:
    api = Api(service, app=create_app(service, (*SURFACES, OTHER)))
    try:
        assert api.get("/other/missing").text == "FileNotFoundException: no such thing"
        assert api.get("/other/nope").status_code == 404
        assert api.get("/other/nope").text.startswith("IllegalArgumentException: ")
        assert json.loads(api.get("/v1/nope").text)["error"] == "NoSuchRoute"
        buggy = api.get("/other/buggy")
        assert buggy.status_code == 500
        assert "internal detail" not in buggy.text
    finally:
        api.close()


def test_each_surface_takes_the_token_its_own_way(
    make_service: Callable[..., WorkerService],
) -> None:
    service = make_service("dora.worker.security.token=s3cret")
    api = Api(service, app=create_app(service, (*SURFACES, OTHER)))
    try:
        refused = api.get("/other/missing")
        assert refused.status_code == 401
        assert refused.text == "AccessControlException: missing or wrong token (delegation=<token>)"
        bearer = {"Authorization": "Bearer s3cret"}
        assert api.get("/other/missing", headers=bearer).status_code == 401
        assert api.get("/other/missing", params={"delegation": "s3cret"}).status_code == 404
        assert api.get("/metrics", headers=bearer).status_code == 200
        assert api.get("/metrics", params={"delegation": "s3cret"}).status_code == 401
    finally:
        api.close()
