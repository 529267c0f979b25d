"""The demo's dataset: synthetic taxi trips as Parquet files, deterministic for given
parameters (numpy's seeded generator), cached on disk under a hash of those parameters so that
reruns reuse it."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from worker.devlab.demo.spec import DatasetSpec

ZONES = 265
PAYMENT_TYPES = ("card", "cash", "no_charge", "dispute")
PAYMENT_WEIGHTS = (0.70, 0.26, 0.02, 0.02)
# Share of trips with 0..6 passengers (0: a meter left running; the pipeline drops those).
PASSENGER_WEIGHTS = (0.02, 0.70, 0.14, 0.05, 0.04, 0.03, 0.02)
MONTH_START_US = 1_704_067_200_000_000  # 2024-01-01T00:00:00, naive wall-clock time
MONTH_US = 31 * 86_400 * 1_000_000
Progress = Callable[[int, int], None]


def trips(spec: DatasetSpec, index: int, revision: int = 0) -> pa.Table:
    """File ``index`` of the dataset; another ``revision`` is different data for the same file
    (the demo's "the file was overwritten")."""
    rng = np.random.default_rng([spec.seed, index, revision])
    n = spec.rows_per_file
    # Zone popularity is skewed, as in real taxi data: a few zones see most pickups.
    zone_weights = 1.0 / np.arange(1, ZONES + 1) ** 0.8
    zone_weights /= zone_weights.sum()
    pickup_us = MONTH_START_US + rng.integers(0, MONTH_US, n)
    minutes = np.clip(rng.lognormal(2.4, 0.6, n), 1.0, 180.0)
    distance = np.round(np.clip(minutes * rng.normal(0.28, 0.08, n), 0.0, 80.0), 2)
    fare = np.round(3.0 + 2.5 * distance + 0.5 * minutes, 2)
    # A few refunds and voided trips, which the pipeline filters out.
    fare[rng.random(n) < 0.01] *= -1
    payment = rng.choice(len(PAYMENT_TYPES), n, p=PAYMENT_WEIGHTS)
    tip = np.where(payment == 0, np.round(fare * rng.uniform(0.0, 0.3, n), 2), 0.0)
    tolls = np.where(rng.random(n) < 0.08, 6.94, 0.0)
    pickup_zone = rng.choice(ZONES, n, p=zone_weights) + 1
    dropoff_zone = rng.choice(ZONES, n, p=zone_weights) + 1
    columns = {
        "vendor_id": pa.array(rng.integers(1, 3, n), pa.int8()),
        "pickup_at": pa.array(pickup_us, pa.timestamp("us")),
        "dropoff_at": pa.array(pickup_us + (minutes * 60e6).astype(np.int64), pa.timestamp("us")),
        "pickup_zone": pa.array(pickup_zone, pa.int16()),
        "dropoff_zone": pa.array(dropoff_zone, pa.int16()),
        **_coordinates(rng, "pickup", pickup_zone),
        **_coordinates(rng, "dropoff", dropoff_zone),
        "passenger_count": pa.array(rng.choice(7, n, p=PASSENGER_WEIGHTS), pa.int8()),
        "trip_distance": pa.array(distance),
        "fare_amount": pa.array(fare),
        "tip_amount": pa.array(tip),
        "tolls_amount": pa.array(tolls),
        "total_amount": pa.array(np.round(fare + tip + tolls, 2)),
        "payment_type": pa.array(np.asarray(PAYMENT_TYPES)[payment]).dictionary_encode(),
    }
    return pa.table(columns)


def _coordinates(rng: np.random.Generator, prefix: str, zones: np.ndarray) -> dict[str, pa.Array]:
    """GPS positions scattered around each zone's (made-up) centre, as older taxi data has."""
    centre_lat = 40.55 + (zones % 23) * 0.015
    centre_lon = -74.10 + (zones // 23) * 0.03
    return {
        f"{prefix}_latitude": pa.array(centre_lat + rng.normal(0.0, 0.004, len(zones))),
        f"{prefix}_longitude": pa.array(centre_lon + rng.normal(0.0, 0.004, len(zones))),
    }


def write_parquet(table: pa.Table, path: Path) -> None:
    """Write atomically, so an interrupted run never leaves a torn file in the cache."""
    temp = path.with_name(path.name + ".tmp")
    pq.write_table(table, temp, compression="snappy", row_group_size=1 << 20)
    temp.replace(path)


def ensure_dataset(spec: DatasetSpec, cache_dir: Path, progress: Progress) -> Path:
    """The dataset's directory under ``cache_dir``, generated unless a complete one is there.
    ``progress(done, total)`` is called as files are written."""
    target = cache_dir / f"taxi-{spec.digest()}"
    marker = target / "_COMPLETE"
    if marker.exists():
        progress(spec.files, spec.files)
        return target
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    for index in range(spec.files):
        write_parquet(trips(spec, index), target / spec.file_name(index))
        progress(index + 1, spec.files)
    # Written last: a directory without it is a half-generated one from an interrupted run.
    marker.write_text(json.dumps(asdict(spec)))
    return target


def data_files(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.parquet"))
