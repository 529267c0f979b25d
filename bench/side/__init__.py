"""The side-by-side benchmark suite of issue 11: every way a Python user reaches the same bytes
(s3fs with and without its listings cache, fsspec's simplecache and blockcache, the dora fsspec
client with and without its speed-ups, the worker's raw HTTP API, a raw local read), through one
delaying, counting proxy in front of one SeaweedFS, with a real worker process.

- :mod:`bench.side.cli`: the command (``python -m bench.side``), run order, result file;
- :mod:`bench.side.services`: SeaweedFS, the proxy process, the worker process;
- :mod:`bench.side.contenders` and :mod:`bench.side.handles`: who is measured, and how;
- ``wl_*``: the workloads; :mod:`bench.side.core`: sizes, repetitions, interleaving;
- :mod:`bench.side.results`, :mod:`bench.side.render`, :mod:`bench.side.plots`,
  :mod:`bench.side.goals`: the result file and what is made from it;
- :mod:`bench.side.profiling`: py-spy recordings of the worker during a workload.
"""
