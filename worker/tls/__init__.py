"""TLS on every hop: the worker's listener (:mod:`worker.tls.server`) and the property keys of
it (:mod:`worker.tls.keys`); the contexts that reach a worker and etcd, which the client makes
too, are in the shared :mod:`worker.common.tls`. Importing this package imports nothing but
the standard library and ``config``."""
