"""TLS on every hop: the worker's listener (:mod:`worker.tls.server`), the clients that reach
it and etcd (:mod:`worker.tls.client`), and the property keys of both (:mod:`worker.tls.keys`).
Importing this package imports nothing but the standard library and ``config``."""
