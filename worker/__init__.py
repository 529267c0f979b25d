"""The cache agent: metadata tiers, read and write paths, REST API, CLI, client, Spark."""
