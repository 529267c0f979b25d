"""Page store options built from the configuration."""

from __future__ import annotations

from pathlib import Path

import pytest

import config.core_keys
import pagestore.keys
from config import Config, ConfigError, Registry, load_config
from pagestore.options import PageDirOptions, PageStoreOptions

DIRS = "dora.worker.page.store.dirs"
SIZES = "dora.worker.page.store.sizes"


def configure(*defines: str) -> Config:
    registry = Registry().extend([*config.core_keys.KEYS, *pagestore.keys.KEYS])
    return load_config(registry, environ={}, defines=defines)


def test_defaults_put_pages_under_the_work_dir() -> None:
    options = PageStoreOptions.from_config(configure())
    home = Path("~").expanduser()
    assert options.dirs == (PageDirOptions(home / ".cache/doracache/pages", 1 << 30),)
    assert (options.page_size, options.evictor) == (1 << 20, "s3fifo")


def test_one_size_applies_to_every_dir(tmp_path: Path) -> None:
    options = PageStoreOptions.from_config(configure(f"{DIRS}={tmp_path}/a,~/b", f"{SIZES}=2GB"))
    assert [d.capacity for d in options.dirs] == [2 << 30, 2 << 30]
    assert options.dirs[1].path == Path("~/b").expanduser()
    assert options.capacity_bytes == 4 << 30


def test_sizes_can_be_given_per_dir() -> None:
    options = PageStoreOptions.from_config(
        configure(
            "dora.worker.page.store.dirs=/a,/b",
            "dora.worker.page.store.sizes=1GB,3GB",
            "dora.worker.page.store.page.size=64KB",
            "dora.worker.page.store.evictor=lfu",
        )
    )
    assert [d.capacity for d in options.dirs] == [1 << 30, 3 << 30]
    assert (options.page_size, options.evictor) == (64 << 10, "lfu")


def test_mismatched_sizes_name_both_keys() -> None:
    config = configure(f"{DIRS}=/a,/b,/c", f"{SIZES}=1GB,2GB")
    with pytest.raises(ConfigError, match=r"sizes has 2 values for 3 directories in .*dirs"):
        PageStoreOptions.from_config(config)


def test_a_capacity_below_one_page_is_refused() -> None:
    config = configure("dora.worker.page.store.sizes=512KB")
    with pytest.raises(ConfigError, match="smaller than one page"):
        PageStoreOptions.from_config(config)


def test_a_dir_listed_twice_is_refused() -> None:
    with pytest.raises(ConfigError, match="twice"):
        PageStoreOptions.from_config(configure("dora.worker.page.store.dirs=/a,/a"))


def test_inconsistent_options_are_refused_when_built_directly() -> None:
    with pytest.raises(ValueError):
        PageStoreOptions(dirs=())
    with pytest.raises(ValueError):
        PageStoreOptions(dirs=(PageDirOptions(Path("/a"), 1 << 30),), evictor="random")
