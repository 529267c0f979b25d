"""Fixed-size pages of file data on local disk, bounded, checksummed, restored after restart.

Where things live:

- ``api``: the two interfaces, :class:`~pagestore.api.PageStore` (what the worker uses) and
  :class:`~pagestore.api.Store` (what the cache sits on), with ``PutResult`` and ``StoreStats``;
- ``cache``: :class:`~pagestore.cache.PageCache`, the one ``PageStore``: read-through with single
  flight, the invalidation log, counters, failures as misses;
- ``factory``: the cache the keys ask for (the worker builds it there and nowhere else);
- ``store``: :class:`~pagestore.store.DiskStore`, the store on disk; ``reaper``: what removes
  its pages' files; ``memory``: :class:`~pagestore.memory.MemoryStore`, the store in memory
  (for tests);
- ``invalidation`` and ``counters``: the cache's log of invalidations and its counters;
- ``page``: ``PageId`` and the on-disk name of a page; ``pagefile``: the page file format (a
  header with a checksum per 16 KiB block, then the data);
- ``shortcircuit``: reading page files straight from disk, for clients on the worker's host
  (given ``PageCache.locate``); dependency-light;
- ``disk``: one page directory's files; ``dirs``: directories at run time and page placement;
- ``owner``: the marker that makes a directory the store's; ``layout``: the names the store
  gives to what it creates (nothing else is ever removed);
- ``index``: the in-memory page index; ``restore``: rebuilding it after a restart;
- ``files``: the URI of each file with pages (in memory and as a record on disk), for
  invalidation by prefix;
- ``evict``: eviction policies, one module each; ``flight``: single flight;
- ``options`` and ``keys``: settings and the property keys they come from.
"""
