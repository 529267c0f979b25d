"""Validation of the chart's Prometheus Operator objects (ServiceMonitor, PodMonitor).

kubernetes-validate knows only the built-in kinds, so these are checked against the models
cloudcoil generates from the Prometheus Operator's own CRD schemas: types, enums and patterns by
pydantic, and unknown fields (which pydantic drops silently) by comparing the object with what the
model kept of it."""

from __future__ import annotations

import functools
from typing import Any

GROUP_VERSION = "monitoring.coreos.com/v1"


class MonitorInvalid(AssertionError):
    """A monitor the Prometheus Operator's API server would refuse (or silently trim)."""


@functools.cache
def _models() -> dict[str, Any]:
    # A 2 MB generated module: import it only for the tests that render a monitor.
    from cloudcoil.models.prometheus_operator import v1

    return {"ServiceMonitor": v1.ServiceMonitor, "PodMonitor": v1.PodMonitor}


def is_monitor(manifest: dict[str, Any]) -> bool:
    return bool(manifest.get("apiVersion") == GROUP_VERSION)


def validate_monitor(manifest: dict[str, Any]) -> None:
    """Raise MonitorInvalid unless ``manifest`` is a valid ServiceMonitor or PodMonitor with no
    field the CRD does not define."""
    model = _models().get(manifest.get("kind", ""))
    if model is None:
        raise MonitorInvalid(f"{manifest.get('kind')!r} is not a monitor kind")
    try:
        parsed = model.model_validate(manifest)
    except ValueError as exc:  # pydantic.ValidationError is a ValueError
        raise MonitorInvalid(str(exc)) from exc
    kept = parsed.model_dump(mode="json", by_alias=True, exclude_unset=True)
    unknown = _dropped(manifest, kept, "")
    if unknown:
        raise MonitorInvalid(f"fields the CRD does not define: {', '.join(unknown)}")


def _dropped(given: Any, kept: Any, path: str) -> list[str]:
    """Paths present in ``given`` but not in ``kept``."""
    if isinstance(given, dict) and isinstance(kept, dict):
        missing = [f"{path}.{key}" for key in given if key not in kept]
        nested = [
            found
            for key in given
            if key in kept
            for found in _dropped(given[key], kept[key], f"{path}.{key}")
        ]
        return missing + nested
    if isinstance(given, list) and isinstance(kept, list):
        return [
            found
            for index, (a, b) in enumerate(zip(given, kept, strict=False))
            for found in _dropped(a, b, f"{path}[{index}]")
        ]
    return []
