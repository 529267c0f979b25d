"""One-off experiments: benchmarks that answered a question once (is the memory tier worth it,
what a slow client costs, which path-rule engine is faster ...) and that ``make bench``
(:mod:`bench.run_all`) does not run. Each still runs alone: ``python -m bench.experiments.X``;
bench/RESULTS.md cites the figures they gave."""
