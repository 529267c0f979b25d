"""REST v1's OpenAPI document is its contract: schemathesis sends what the document allows (and
what it does not) to a real service over a local directory, in process, and every answer must be
one the document declares (status code, content type, body and headers), never a 500."""

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.worker.conftest import Api
from worker.api.app import SURFACES, create_app
from worker.service import WorkerService

EXAMPLES = 20
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]


@pytest.fixture
def inside(data_dir: Path) -> list[str]:
    """URIs under the mount root: a file, a directory, a file in it, a name that is missing."""
    return [f"file://{data_dir}/{name}" for name in ("f.txt", "dir", "dir/g", "missing")]


@pytest.fixture
def rest_v1(make_service: Callable[..., WorkerService], data_dir: Path) -> Any:
    (data_dir / "f.txt").write_bytes(b"0123456789")
    (data_dir / "dir").mkdir()
    (data_dir / "dir" / "g").write_bytes(b"g")
    app = create_app(make_service("dora.worker.page.store.page.size=4KB"))
    return schemathesis.openapi.from_asgi("/openapi.json", app).include(tag="rest-v1")


@pytest.mark.slow
def test_every_answer_is_declared(rest_v1: Any, inside: list[str]) -> None:
    # One Hypothesis run per operation, driven here rather than by schemathesis' pytest
    # plugin, whose fixture loader does not work with this pytest.
    operations = [result.ok() for result in rest_v1.get_all_operations()]
    assert len(operations) == 26

    for operation in operations:
        # Random paths are refused before the UFS sees them: half the cases name real ones.
        @given(case=operation.as_strategy(), real=st.none() | st.sampled_from(inside))
        @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
        def answers_as_declared(case: Any, real: str | None) -> None:
            for name in ("path", "src", "dst"):
                if real is not None and isinstance(case.query, dict) and name in case.query:
                    case.query[name] = real
            case.call_and_validate(checks=CHECKS)

        answers_as_declared()


def test_the_document_declares_parameters_errors_and_auth(
    make_service: Callable[..., WorkerService],
) -> None:
    service = make_service("dora.worker.security.token=s3cret")
    api = Api(service, {"Authorization": "Bearer s3cret"})
    try:
        document = api.get("/openapi.json").json()
        docs = api.get("/docs")
    finally:
        api.close()
    assert docs.status_code == 200 and "swagger" in docs.text.lower()
    read = document["paths"]["/v1/read"]["get"]
    names = {p["name"]: p for p in read["parameters"]}
    assert {"path", "offset", "length", "sync_interval", "version", "range"} <= set(names)
    assert names["range"]["in"] == "header"
    assert all(p.get("description") for p in read["parameters"])
    assert set(read["responses"]["200"]["content"]) == {"application/octet-stream"}
    assert {"206", "400", "401", "403", "404", "412", "416", "503"} <= set(read["responses"])
    assert "422" not in read["responses"]
    error = read["responses"]["404"]["content"]["application/json"]["schema"]["$ref"]
    assert error.endswith("/ErrorBody")
    assert "HTTPBearer" in document["components"]["securitySchemes"]
    for path, operations in document["paths"].items():
        for operation in operations.values():
            guarded = path not in ("/healthz", "/readyz")
            assert ("security" in operation) is guarded, path
            assert ("401" in operation["responses"]) is guarded, path


def test_lean_routes_read_exactly_the_documented_parameters(
    make_service: Callable[..., WorkerService],
) -> None:
    document = create_app(make_service()).openapi()
    # Routes whose handler reads its own parameters from the Request (WebHDFS) declare none.
    lean = [r for s in SURFACES for r in s.routes if r.lean is not None and r.lean.names]
    assert {r.path for r in lean} >= {"/v1/status", "/v1/list", "/v1/read", "/v1/locate"}
    for route in lean:
        operation = document["paths"][route.path][route.method.lower()]
        documented = {p["name"] for p in operation.get("parameters", [])}
        assert route.lean is not None and route.lean.names == documented, route.path


def test_a_lean_route_answers_bad_parameters_as_the_declared_rules_do(
    make_service: Callable[..., WorkerService], data_dir: Path
) -> None:
    (data_dir / "f").write_bytes(b"0123456789")
    api = Api(make_service())
    try:
        missing = api.get("/v1/status")
        not_a_number = api.get("/v1/read", params={"path": f"file://{data_dir}/f", "offset": "x"})
        negative = api.get("/v1/read", params={"path": f"file://{data_dir}/f", "length": "-1"})
        ranged = api.get(
            "/v1/read", params={"path": f"file://{data_dir}/f"}, headers={"Range": "bytes=2-4"}
        )
        head = api.request("HEAD", "/v1/status")
    finally:
        api.close()
    assert (missing.status_code, missing.json()) == (
        400,
        {"error": "BadRequest", "message": "missing query parameter 'path'"},
    )
    assert not_a_number.status_code == 400
    assert (
        not_a_number.json()["message"]
        == "query parameter offset='x': expected an integer of at most 9223372036854775807 "
        "(digits 0-9 only)"
    )
    assert negative.status_code == 416
    assert (ranged.status_code, ranged.content) == (206, b"234")
    assert head.status_code == 405
