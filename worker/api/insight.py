"""The operator's view as JSON, part of REST v1: what the console draws, for any dashboard too.

- ``GET /v1/overview``: version, uptime, configuration sources, mount roots, readiness and
  restore, UFS health (latency quantiles, the last unavailability), security (token, TLS),
  the UFS change feeds (what they applied, their lag per source), the page store per directory,
  the metadata tiers and the S3 endpoint's traffic (requests and latency per operation, and in
  a cluster the reads its keys' owners answered);
- ``GET /v1/history``: the counters sampled every few seconds over the last hour;
- ``GET /v1/files/top``: the files read most through this worker, with how much is cached;
- ``GET /v1/jobs``: every load job the worker remembers;
- ``GET /v1/cluster``: with etcd, every worker as ``dora cluster ls --json`` shows it, each with
  its own counters as it answers them (its hit ratio), or why it could not be asked.
"""

from __future__ import annotations

import ssl
from concurrent.futures import ThreadPoolExecutor
from typing import Annotated, Any

import httpx
from fastapi import Query
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from worker import keys
from worker.api import contract as c
from worker.api.jsonbody import json_response
from worker.api.surface import Route
from worker.cluster.etcd import EtcdError, EtcdUnavailable
from worker.cluster.view import NoCluster
from worker.common.tls import user_files
from worker.service import WorkerService

PEER_TIMEOUT_S = 2.0
"""How long ``/v1/cluster`` waits for each worker's own counters."""


async def overview(service: WorkerService) -> Response:
    return json_response(await run_in_threadpool(service.overview))


async def history(
    service: WorkerService,
    since: Annotated[
        float | None, Query(ge=0, description="Only samples taken after this epoch second.")
    ] = None,
) -> Response:
    return json_response(service.history_since(since))


async def top_files(
    service: WorkerService,
    limit: Annotated[int, Query(ge=1, le=1000, description="How many files.")] = 20,
) -> Response:
    return json_response({"files": await run_in_threadpool(service.top_read, limit)})


async def jobs(service: WorkerService) -> Response:
    return json_response({"jobs": [job.to_dict() for job in service.load_jobs()]})


async def cluster(service: WorkerService) -> Response:
    return json_response(await run_in_threadpool(_cluster, service))


def _cluster(service: WorkerService) -> dict[str, Any]:
    endpoints = list(service.cluster_endpoints())
    try:
        snapshot = service.cluster_status()
    except NoCluster:
        return {"cluster": None, "etcd": [], "workers": []}
    except (EtcdUnavailable, EtcdError) as exc:
        return {"cluster": None, "etcd": endpoints, "workers": [], "error": str(exc)}
    answer = snapshot.to_dict()
    answer["etcd"] = endpoints
    token = service.config.get(keys.TOKEN)
    # Peers are asked as a client asks them: the dora.user.tls.* files, else the system's store.
    verify = user_files(service.config).context()
    online = [w for w in answer["workers"] if w["online"]]
    with ThreadPoolExecutor(max(1, min(8, len(online)))) as pool:
        asked = pool.map(lambda w: _peer_stats(w["url"], token, verify), online)
        for worker, peer in zip(online, asked, strict=True):
            worker.update(peer)
    for worker in answer["workers"]:
        worker["console"] = f"{worker['url']}/ui/"
    return answer


def _peer_stats(url: str, token: str | None, verify: ssl.SSLContext) -> dict[str, Any]:
    """A worker's own counters, or why they could not be had."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        answer = httpx.get(
            f"{url}/v1/stats", headers=headers, timeout=PEER_TIMEOUT_S, verify=verify
        )
        answer.raise_for_status()
        stats: dict[str, int] = answer.json()
    except (httpx.HTTPError, ValueError) as exc:
        return {"stats": None, "stats_error": f"{type(exc).__name__}: {exc}"}
    served = stats.get("page_hits", 0) + stats.get("page_misses", 0)
    ratio = None if served == 0 else round(stats.get("page_hits", 0) / served, 4)
    return {"stats": stats, "hit_ratio": ratio}


ROUTES = (
    Route("GET", "/v1/overview", overview, {"summary": "The worker at a glance"}),
    Route(
        "GET",
        "/v1/history",
        history,
        {"summary": "Counters over the last hour", "responses": c.errors(400)},
    ),
    Route(
        "GET",
        "/v1/files/top",
        top_files,
        {"summary": "The files read most", "responses": c.errors(400)},
    ),
    Route("GET", "/v1/jobs", jobs, {"summary": "Every load job the worker remembers"}),
    Route(
        "GET", "/v1/cluster", cluster, {"summary": "The cluster's workers, each with its counters"}
    ),
)
