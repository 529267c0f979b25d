"""What the client and the worker share, and nothing else: the error catalogue (``errors``),
byte ranges (``ranges``), the headers they speak (``deadlines``, ``revision``), the
generation-file format and its reader (``generations``), the sync interval's rules (``sync``),
the hash ring (``ring``, and ``clusterring``, which follows a cluster's workers in etcd, with
``credentials`` and the fork-safe ``forksafe``), the TLS contexts a client makes (``tls``) and the
keys a client reads (``client_keys``: ``dora.user.*``, the cluster's etcd).

It imports the standard library, ``config`` and the UFS's error vocabulary, never the worker's
parts, the page store or a UFS backend (but for the first-use imports import-linter's contract
declares: a client following a cluster reads its membership with ``worker.cluster``'s etcd
client), so ``import worker.client`` loads no server code. As Alluxio's ``core/common``, which
its client and its servers both depend on. The contract is in pyproject.toml
(``[tool.importlinter]``), run by ``make lint``."""
