"""Fixed-size pages of file data on local disk, bounded, checksummed, restored after restart.

Where things live:

- ``api``: the :class:`~pagestore.api.PageStore` protocol, ``PutResult`` and ``StoreStats``;
- ``store``: :class:`~pagestore.store.LocalPageStore`, the store on disk (also re-exports the
  names the worker needs: ``PageStore``, ``PageStoreOptions``, ``PutResult``, ``StoreStats``);
- ``memory``: ``MemoryPageStore``, the same contract in memory, for tests;
- ``base``: what both stores share (read-through with single flight, invalidation log, counters);
- ``page``: ``PageId`` and the on-disk name of a page; ``pagefile``: the page file format (a
  header with a checksum per 16 KiB block, then the data);
- ``shortcircuit``: reading page files straight from disk, for clients on the worker's host
  (given ``LocalPageStore.locate``); dependency-light;
- ``disk``: one page directory's files; ``dirs``: directories at run time and page placement;
- ``owner``: the marker that makes a directory the store's; ``layout``: the names the store
  gives to what it creates (nothing else is ever removed);
- ``index``: the in-memory page index; ``restore``: rebuilding it after a restart;
- ``files``: the URI of each file with pages (in memory and as a record on disk), for
  invalidation by prefix;
- ``evict``: eviction policies, one module each; ``flight``: single flight;
- ``options`` and ``keys``: settings and the property keys they come from.
"""
