"""The header of read-your-writes across workers (``worker.cluster.http``): a client sends
``X-Dora-Revision: R``, the newest feed revision it has seen, and every answer carries the
revision it reflects. Its own module so that the client imports it without any server code."""

REVISION_HEADER = "X-Dora-Revision"
