"""What the client and the worker share, and nothing else: the error catalogue, byte ranges, the
headers they speak (deadline, feed revision), the generation-file format, the hash ring, the
TLS contexts a client makes and the keys a client reads (``dora.user.*``, the cluster's etcd).

It imports the standard library, ``config`` and the UFS's vocabulary (``ufs.errors``,
``ufs.uri``, ``ufs.status``), never the worker's parts, the page store or a UFS backend, so
``import worker.client`` loads no server code. As Alluxio's ``core/common``, which its client
and its servers both depend on. The contract is import-linter's, in pyproject.toml
(``[tool.importlinter]``), run by ``make lint``."""
