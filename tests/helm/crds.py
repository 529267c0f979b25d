"""Validation of the chart's custom resources: the Prometheus Operator's ServiceMonitor and
PodMonitor, cert-manager's Certificate.

kubernetes-validate knows only the built-in kinds, so these are checked against the models
cloudcoil generates from the operators' own CRD schemas: types, enums and patterns by pydantic,
and unknown fields (which pydantic drops silently) by comparing the object with what the model
kept of it."""

from __future__ import annotations

import functools
from typing import Any

GROUP_VERSIONS = ("monitoring.coreos.com/v1", "cert-manager.io/v1")


class ResourceInvalid(AssertionError):
    """An object the operator's API server would refuse (or silently trim)."""


@functools.cache
def _models() -> dict[str, Any]:
    # Large generated modules: import them only for the tests that render such an object.
    from cloudcoil.models.cert_manager import v1 as cert_manager
    from cloudcoil.models.prometheus_operator import v1 as monitoring

    return {
        "ServiceMonitor": monitoring.ServiceMonitor,
        "PodMonitor": monitoring.PodMonitor,
        "Certificate": cert_manager.Certificate,
    }


def is_custom(manifest: dict[str, Any]) -> bool:
    return manifest.get("apiVersion") in GROUP_VERSIONS


def validate_custom(manifest: dict[str, Any]) -> None:
    """Raise ResourceInvalid unless ``manifest`` is a valid ServiceMonitor, PodMonitor or
    Certificate with no field the CRD does not define."""
    model = _models().get(manifest.get("kind", ""))
    if model is None:
        raise ResourceInvalid(f"{manifest.get('kind')!r} is not a kind the chart renders")
    try:
        parsed = model.model_validate(manifest)
    except ValueError as exc:  # pydantic.ValidationError is a ValueError
        raise ResourceInvalid(str(exc)) from exc
    kept = parsed.model_dump(mode="json", by_alias=True, exclude_unset=True)
    unknown = _dropped(manifest, kept, "")
    if unknown:
        raise ResourceInvalid(f"fields the CRD does not define: {', '.join(unknown)}")


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
