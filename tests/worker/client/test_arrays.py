"""zarr 3 and xarray through ``dora`` (the real worker app in process, over a local directory):
arrays and groups written through the cache read back the same through it and directly."""

from pathlib import Path

import numpy as np
import pytest
import xarray as xr
import zarr
from zarr.storage import FsspecStore, LocalStore

from tests.worker.client.conftest import dora_fs
from worker.client import DoraFileSystem
from worker.service import WorkerService


@pytest.fixture
def store(service: WorkerService, root: str) -> FsspecStore:
    fs: DoraFileSystem = dora_fs(service, asynchronous=True)
    return FsspecStore(fs, path=f"{root}/arrays.zarr")


def test_a_zarr_array_and_group_round_trip(store: FsspecStore, data_dir: Path) -> None:
    values = np.arange(40_000, dtype="float64").reshape(200, 200)
    group = zarr.open_group(store, mode="w")
    group.attrs["title"] = "through dora"
    array = group.create_array("values", shape=values.shape, chunks=(50, 50), dtype="float64")
    array[:] = values
    sharded = group.create_array(
        "sharded", shape=(64, 64), chunks=(8, 8), shards=(32, 32), dtype="int32"
    )
    sharded[:] = np.arange(64 * 64, dtype="int32").reshape(64, 64)

    through = zarr.open_group(store.with_read_only(True), mode="r")
    direct = zarr.open_group(LocalStore(data_dir / "arrays.zarr", read_only=True), mode="r")
    assert through.attrs["title"] == direct.attrs["title"] == "through dora"
    np.testing.assert_array_equal(through["values"][:], values)
    np.testing.assert_array_equal(through["values"][13:77, 5:190], direct["values"][13:77, 5:190])
    # Sharded chunks are read as byte ranges of one object (suffix and partial reads).
    np.testing.assert_array_equal(through["sharded"][3:40, 9:50], direct["sharded"][3:40, 9:50])
    assert sorted(through.array_keys()) == ["sharded", "values"]


def test_xarray_round_trip(store: FsspecStore, data_dir: Path) -> None:
    dataset = xr.Dataset(
        {"t": (("time", "x"), np.random.default_rng(3).normal(size=(48, 30)))},
        coords={"time": np.arange(48), "x": np.linspace(0.0, 1.0, 30)},
        attrs={"source": "test"},
    )
    dataset.to_zarr(store, mode="w", encoding={"t": {"chunks": (12, 10)}}, consolidated=False)

    through = xr.open_zarr(store, consolidated=False).load()
    direct = xr.open_zarr(str(data_dir / "arrays.zarr"), consolidated=False).load()
    xr.testing.assert_identical(through, direct)
    xr.testing.assert_allclose(through, dataset)
