"""The demo job (``dora demo``, ``make demo``): a PySpark pipeline over generated taxi trips,
read through the cache cold, warm and after a change, checked against a direct read."""
