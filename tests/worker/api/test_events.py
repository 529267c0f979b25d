"""POST /v1/events: on only when the feeds name webhook, its own token, bounded JSON bodies,
precise refusals. (Events taking effect: tests/integration/feeds/test_feed_webhook.py.)"""

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace

import orjson

from tests.worker.conftest import Api, open_service
from worker.api.app import create_app
from worker.api.events import MAX_BODY
from worker.cluster.events import Event, Op, Origin
from worker.cluster.http import RevisionMiddleware
from worker.service import WorkerService

ON = ("dora.ufs.change.feeds=webhook", "dora.ufs.change.webhook.token=hook-secret")
HOOK = {"Authorization": "Bearer hook-secret"}


def post(
    api: Api, body: object, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str]]:
    content = body if isinstance(body, bytes) else orjson.dumps(body)
    answer = api.request("POST", "/v1/events", content=content, headers=headers or HOOK)
    return answer.status_code, answer.json()


def test_off_unless_the_feeds_name_webhook(make_service: Callable[..., WorkerService]) -> None:
    api = Api(make_service())
    try:
        status, answer = post(api, {"Records": []})
    finally:
        api.close()
    assert status == 404 and "does not name webhook" in answer["message"]


def test_its_own_token_not_the_workers(make_service: Callable[..., WorkerService]) -> None:
    api = Api(make_service(*ON, "dora.worker.security.token=worker-secret"))
    try:
        assert post(api, {"Records": []}, {"Authorization": "Bearer worker-secret"})[0] == 401
        assert post(api, {"Records": []}, {"X-Other": "1"})[0] == 401
        assert post(api, {"Records": []}) == (200, {"changes": 0})
    finally:
        api.close()


def test_bad_bodies_are_named(make_service: Callable[..., WorkerService]) -> None:
    api = Api(make_service(*ON))
    try:
        status, answer = post(api, b"{not json")
        assert status == 400 and "not JSON" in answer["message"]
        status, answer = post(api, {"Records": [{"eventName": 1}]})
        assert status == 400 and "record 0 is not an S3 event record" in answer["message"]
        status, answer = post(api, b" " * (MAX_BODY + 1))
        assert status == 413 and answer["error"] == "PayloadTooLarge"
    finally:
        api.close()


def test_events_outside_the_mount_roots_change_nothing(
    make_service: Callable[..., WorkerService], data_dir: Path
) -> None:
    service = make_service(*ON, "dora.user.file.metadata.sync.interval=-1")
    (data_dir / "f").write_bytes(b"one")
    uri = f"file://{data_dir}/f"
    assert b"".join(service.read(service.request(uri)).chunks) == b"one"
    (data_dir / "f").write_bytes(b"two!")
    api = Api(service)
    try:
        # A SeaweedFS event names s3:// objects: outside this worker's roots (a directory).
        message = {"old_entry": {"name": "f"}, "new_entry": {"name": "f"}}
        body = {"key": "/buckets/b/f", "event_type": "update", "message": message}
        assert post(api, body) == (200, {"changes": 1})
    finally:
        api.close()
    assert service.changes.counters.snapshot()["outside_roots"] == 1
    assert b"".join(service.read(service.request(uri)).chunks) == b"one"


def test_a_cluster_is_told_with_the_event_times_and_the_answer_names_the_revision(
    tmp_path: Path,
) -> None:
    service = open_service(tmp_path / "work", "s3://hooked", *ON)
    told: list[tuple[list[Event], list[Origin | None]]] = []

    def publish(events: list[Event], origins: Sequence[Origin | None] = ()) -> int:
        told.append((events, list(origins)))
        return 42  # the feed revision the cluster published them under

    service.add_change_listener(publish)
    # The cluster's middleware, over a follower that has passed revision 7 only.
    follower = SimpleNamespace(applied=7, feed_revision=7)
    api = Api(service, app=RevisionMiddleware(create_app(service), follower, 1.0))  # type: ignore[arg-type]
    obj = {"key": "a+b", "eTag": '"e1"'}
    record = {
        "eventName": "ObjectCreated:Put",
        "eventTime": "2026-11-29T07:00:00.250Z",
        "s3": {"bucket": {"name": "hooked"}, "object": obj},
    }
    try:
        answer = api.request("POST", "/v1/events", json={"Records": [record]}, headers=HOOK)
    finally:
        api.close()
        service.close()
    assert answer.json() == {"changes": 1}
    assert answer.headers["X-Dora-Revision"] == "42"
    at_ms = int(datetime(2026, 11, 29, 7, 0, 0, 250000, UTC).timestamp() * 1000)
    assert told == [([Event(Op.CREATED, "s3://hooked/a b", "e1")], [Origin("webhook", at_ms)])]
