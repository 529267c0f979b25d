"""Metadata tiers: memory caches over a RocksDB metastore, with sync and invalidation."""
