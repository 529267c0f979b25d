"""The demo, the lab and the local servers they run on, in one room: nothing of the product's
server or client imports it (an import contract in pyproject.toml says so).

- :mod:`worker.devlab.local`: SeaweedFS, etcd and a TCP proxy run on this machine, for tests,
  benchmarks and the demo;
- :mod:`worker.devlab.lab`: emulated hosts (network namespaces) running those servers and workers;
- :mod:`worker.devlab.demo`: ``dora demo``, the Spark pipeline read through the cache."""
