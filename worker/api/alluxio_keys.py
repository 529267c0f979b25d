"""Property keys of the Alluxio-compatible surface (``worker.api.alluxio``)."""

from __future__ import annotations

from typing import Any

from config.keys import KeyType, PropertyKey

NODE_ANSWER_ADDRESS = "address"
NODE_ANSWER_LOCATIONS = "locations"

NODE_ANSWER: PropertyKey[str] = PropertyKey(
    "dora.worker.alluxio.node.answer",
    KeyType.STRING,
    NODE_ANSWER_ADDRESS,
    "Shape of the answer to Alluxio's GET /v1/node: 'address' ({Host, HttpServerPort}, what "
    "alluxiofs 1.0.18 and later read) or 'locations' (a file-info list with block locations, "
    "what alluxiofs 1.0.17 and earlier read, the versions that find workers through etcd).",
    choices=(NODE_ANSWER_ADDRESS, NODE_ANSWER_LOCATIONS),
)
S3_PORT: PropertyKey[int | None] = PropertyKey(
    "dora.worker.alluxio.s3.port",
    KeyType.INT,
    None,
    "Also listen on this port (on the bind host) for Alluxio's S3-style ranged GET "
    "/<scheme>/<path>: alluxiofs 1.1.x reads byte ranges there, at port 29998 whatever is "
    "configured. Empty: not served on a port of its own.",
    minimum=1,
)

KEYS: list[PropertyKey[Any]] = [NODE_ANSWER, S3_PORT]
