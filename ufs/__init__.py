"""The under-storage adapter over fsspec: statuses, listings, ranged reads, writes, errors."""
