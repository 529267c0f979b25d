"""Servers run on this machine for tests, benchmarks and the demo: SeaweedFS (:mod:`.s3`), etcd
(:mod:`.etcd`), both started by :mod:`.server`, and a TCP proxy that can cut or slow a link
(:mod:`.netproxy`)."""
