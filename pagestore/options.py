"""The page store's settings, built once from the configuration and passed to the store."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from config import Config, ConfigError
from config.core_keys import WORK_DIR
from pagestore import keys
from pagestore.evict import DEFAULT_EVICTOR, EVICTORS
from pagestore.pins import HALF, PinMax


@dataclass(frozen=True)
class PageDirOptions:
    """One page directory and the bytes of page data it may hold."""

    path: Path
    capacity: int


@dataclass(frozen=True)
class PageStoreOptions:
    """Page size, directories with their capacities, the eviction policy, the largest page
    written to a pack (0: none) and the bound on pinned pages. Immutable. Raises ValueError
    when built with inconsistent values."""

    dirs: tuple[PageDirOptions, ...]
    page_size: int = 1 << 20
    evictor: str = DEFAULT_EVICTOR
    pack_limit: int = 64 << 10
    pin_max: PinMax = HALF

    def __post_init__(self) -> None:
        if not self.dirs:
            raise ValueError("a page store needs at least one directory")
        if self.page_size <= 0:
            raise ValueError(f"page size {self.page_size} is not positive")
        if self.pack_limit < 0:
            raise ValueError(f"pack limit {self.pack_limit} is negative")
        if self.evictor not in EVICTORS:
            raise ValueError(f"unknown evictor {self.evictor!r}; expected {', '.join(EVICTORS)}")
        paths = [d.path for d in self.dirs]
        if len(set(paths)) != len(paths):
            raise ValueError(f"page directories are listed twice: {[str(p) for p in paths]}")
        for d in self.dirs:
            if d.capacity < self.page_size:
                raise ValueError(
                    f"capacity {d.capacity} of {d.path} is smaller than one page ({self.page_size})"
                )

    @property
    def capacity_bytes(self) -> int:
        return sum(d.capacity for d in self.dirs)

    @classmethod
    def from_config(cls, config: Config) -> PageStoreOptions:
        """Options from the effective configuration. Directories default to ``<work dir>/pages``;
        ``~`` is expanded. Raises ConfigError naming the keys when sizes and directories do not
        match up."""
        names = config.get(keys.DIRS) or [str(Path(config.get(WORK_DIR)) / "pages")]
        paths = [Path(name).expanduser() for name in names]
        sizes = config.get(keys.SIZES)
        if len(sizes) == 1:
            sizes = sizes * len(paths)
        if len(sizes) != len(paths):
            raise ConfigError(
                f"{keys.SIZES.name} has {len(sizes)} values for {len(paths)} directories in "
                f"{keys.DIRS.name}; expected one value for all, or one per directory"
            )
        try:
            pin_max = PinMax.parse(config.get(keys.PIN_MAX))
        except ValueError as exc:
            raise config.invalid(keys.PIN_MAX, str(exc)) from None
        try:
            return cls(
                dirs=tuple(PageDirOptions(p, s) for p, s in zip(paths, sizes, strict=True)),
                page_size=config.get(keys.PAGE_SIZE),
                evictor=config.get(keys.EVICTOR),
                pack_limit=config.get(keys.PACK_LIMIT),
                pin_max=pin_max,
            )
        except ValueError as exc:
            raise ConfigError(
                f"page store settings ({keys.DIRS.name}, {keys.SIZES.name}, "
                f"{keys.PAGE_SIZE.name}) are inconsistent: {exc}"
            ) from None
