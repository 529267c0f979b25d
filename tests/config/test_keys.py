import pytest

from config import ConfigError, KeyType, PropertyKey, Registry
from worker.keys import build_registry

SIZE = PropertyKey[int]("a.size", KeyType.SIZE, "1MB", "a size", alias="alluxio.a.size")


def test_registry_rejects_duplicate_names_and_aliases() -> None:
    registry = Registry().extend([SIZE])
    with pytest.raises(ConfigError, match="'a.size' is declared twice"):
        registry.add(PropertyKey("a.size", KeyType.INT, "1", "again"))
    with pytest.raises(ConfigError, match="'alluxio.a.size' is declared twice"):
        registry.add(PropertyKey("b.size", KeyType.INT, "1", "b", alias="alluxio.a.size"))


def test_registry_rejects_an_invalid_default() -> None:
    with pytest.raises(ConfigError, match="default of 'bad.key' is invalid"):
        Registry().add(PropertyKey("bad.key", KeyType.DURATION, "soon", "bad"))


def test_lookup_by_alias_and_near_miss_suggestion() -> None:
    registry = Registry().extend([SIZE])
    assert registry.lookup("alluxio.a.size") is SIZE
    with pytest.raises(ConfigError, match="did you mean 'a.size'"):
        registry.lookup("a.sise")


@pytest.mark.parametrize(
    ("key_type", "text", "value"),
    [
        (KeyType.INT, "42", 42),
        (KeyType.BOOL, "TRUE", True),
        (KeyType.BOOL, "no", False),
        (KeyType.STRING, " x ", "x"),
        (KeyType.LIST, "a, b,,c", ["a", "b", "c"]),
        (KeyType.DURATION, "2s", 2000),
        (KeyType.SIZE, "2KB", 2048),
        (KeyType.SIZE_LIST, "1GB, 2GB", [1 << 30, 2 << 30]),
    ],
)
def test_each_type_parses(key_type: KeyType, text: str, value: object) -> None:
    assert PropertyKey("k", key_type, None, "").parse(text) == value


@pytest.mark.parametrize(
    ("key", "text", "expected"),
    [
        (PropertyKey("k", KeyType.INT, None, ""), "ten", "an integer"),
        (PropertyKey("k", KeyType.BOOL, None, ""), "maybe", "true or false"),
        (PropertyKey("k", KeyType.STRING, None, "", choices=("lru", "lfu")), "fifo", "lru, lfu"),
        (PropertyKey("k", KeyType.INT, None, "", minimum=1), "0", "at least 1"),
        (PropertyKey("k", KeyType.INT, None, "", maximum=65535), "65536", "at most 65535"),
        (PropertyKey("k", KeyType.SIZE, None, "", maximum=1024), "2KB", "at most 1KB"),
        (PropertyKey("k", KeyType.INT, None, ""), "٣", "an integer"),
        (PropertyKey("k", KeyType.INT, None, ""), "1_000", "an integer"),
        (PropertyKey("k", KeyType.INT, None, ""), "+5", "an integer"),
        (PropertyKey("k", KeyType.SIZE_LIST, None, ""), "1GB,lots", "64KB"),
    ],
)
def test_bad_values_say_what_was_expected(
    key: PropertyKey[object], text: str, expected: str
) -> None:
    with pytest.raises(ValueError, match=expected):
        key.parse(text)


def test_every_design_key_is_declared_with_its_alluxio_alias() -> None:
    registry = build_registry()
    design = {
        "dora.worker.ufs.file.status.cache.size": "alluxio.dora.ufs.file.status.cache.size",
        "dora.worker.ufs.file.status.cache.ttl": "alluxio.dora.ufs.file.status.cache.ttl",
        "dora.worker.ufs.list.status.cache.ttl": "alluxio.dora.ufs.list.status.cache.ttl",
        "dora.worker.ufs.list.status.cache.nr.dirs": "alluxio.dora.ufs.list.status.cache.nr.dirs",
        "dora.worker.metastore.rocksdb.ttl": "alluxio.dora.worker.metastore.rocksdb.ttl",
        "dora.user.file.metadata.sync.interval": "alluxio.user.file.metadata.sync.interval",
        "dora.worker.page.store.page.size": "alluxio.worker.page.store.page.size",
        "dora.worker.page.store.dirs": "alluxio.worker.page.store.dirs",
        "dora.worker.page.store.sizes": "alluxio.worker.page.store.sizes",
    }
    for name, alias in design.items():
        assert registry.lookup(alias) is registry.lookup(name)
    for name in ("dora.worker.metastore.rocksdb.dir", "dora.worker.ufs.roots",
                 "dora.worker.http.bind.host", "dora.worker.http.port"):  # fmt: skip
        registry.lookup(name)
