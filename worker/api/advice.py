"""``GET /v1/cache/advice``, part of REST v1: how much page store a target hit ratio needs.

The answer is the page cache's miss-ratio curve (:mod:`pagestore.mrc`): the hit ratio an LRU
page store of any capacity would have had on the pages this worker served and stored since it
started, the capacity the target needs, and the curve as points (what ``dora cache advise``
prints and the console plots). LRU's curve: a scan-resistant evictor keeps at least as much on
most traces, so for it the capacity is an upper bound.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Query
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from pagestore import keys as page_keys
from pagestore.mrc import Curve
from worker.api import contract as c
from worker.api.jsonbody import json_response
from worker.api.surface import Route
from worker.service import WorkerService

DEFAULT_TARGET = 0.9


async def advice(
    service: WorkerService,
    target_hit: Annotated[
        float, Query(gt=0, le=1, description="The hit ratio wanted, in (0, 1].")
    ] = DEFAULT_TARGET,
    capacity: Annotated[
        int | None,
        Query(ge=0, description="Also answer the hit ratio at this capacity (bytes)."),
    ] = None,
) -> Response:
    curve = await run_in_threadpool(service.miss_ratio_curve)
    return json_response(describe(service, curve, target_hit, capacity))


def describe(
    service: WorkerService, curve: Curve, target_hit: float, capacity: int | None
) -> dict[str, Any]:
    """What ``/v1/cache/advice`` answers."""
    current = service.capacity_bytes()
    answer: dict[str, Any] = {
        "policy": "lru",
        "evictor": service.config.get(page_keys.EVICTOR),
        "page_size": curve.page_size,
        "references": round(curve.references),
        "sampled": curve.sampled,
        "sample_rate": curve.rate,
        "tracked_pages": curve.tracked_pages,
        "capacity_bytes": current,
        "hit_ratio_at_capacity": _ratio(curve.hit_ratio(current)),
        "max_hit_ratio": _ratio(curve.max_hit_ratio),
        "target_hit": target_hit,
        "capacity_needed_bytes": curve.capacity_for(target_hit),
        "points": [
            {"capacity_bytes": p.capacity_bytes, "hit_ratio": _ratio(p.hit_ratio)}
            for p in curve.points()
        ],
    }
    if capacity is not None:
        answer["capacity"] = capacity
        answer["hit_ratio_at"] = _ratio(curve.hit_ratio(capacity))
    return answer


def _ratio(value: float) -> float:
    return round(value, 6)


ROUTES = (
    Route(
        "GET",
        "/v1/cache/advice",
        advice,
        {
            "summary": "The page store a target hit ratio needs (LRU's miss-ratio curve)",
            "responses": c.errors(400),
        },
    ),
)
