"""A client on a lab host: ``python -m worker.devlab.lab.probe '<json>'`` runs the operations
the JSON names, as a client process on that host would, and prints one JSON line of answers.

The request is ``{"defines": [...client -D settings...], "ops": [...]}``; each op is one of
- ``{"op": "owners", "uris": [...]}``: the ring (from etcd) and each URI's owner;
- ``{"op": "read", "uri": u}``: a read routed by the ring with failover (which worker served it);
- ``{"op": "get", "worker": w, "path": p, "params": {...}, "headers": {...}}``: one HTTP GET
  to one worker (at the URL the client has for it, verified and with the token as the client
  sends them), its status, time and ``X-Dora-Revision`` answered too;
- ``{"op": "write", "uri": u, "text": t}``: a write routed by the ring (or sent to ``worker``);
- ``{"op": "cat", "uri": u}``: a read through the fsspec filesystem (``dora::``), fast path
  included;
- ``{"op": "s3", "uri": u}``: a read straight from S3 (one s3fs client for the process), timed;
- ``{"op": "stats"}``: what the ring-routed ops did so far: failovers, and connection failures
  per worker.
Bytes are answered as their SHA-256 and size; a failure as its status or error.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from typing import Any

import httpx

from config import Config, load_config
from ufs.kinds import s3 as s3_keys
from worker.client.filesystem import DoraFileSystem
from worker.client.http import Call, WorkerClient
from worker.client.options import ClientOptions
from worker.keys import build_registry


def _digest(data: bytes) -> dict[str, Any]:
    return {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}


def _failure(exc: Exception) -> dict[str, Any]:
    return {"error": f"{type(exc).__name__}: {exc}", "status": getattr(exc, "status", None)}


class Probe:
    """The operations, over one client built from the request's settings. Not thread-safe."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.client = WorkerClient(ClientOptions.resolve(config))
        options = self.client.options
        auth = {"Authorization": f"Bearer {options.token}"} if options.token else {}
        self.http = httpx.Client(verify=options.tls.context(), headers=auth, timeout=60)
        self._s3: Any = None

    def owners(self, op: dict[str, Any]) -> dict[str, Any]:
        ring = self.client.ring
        return {"ring": sorted(ring.workers), "owners": {u: ring.owner(u) for u in op["uris"]}}

    def read(self, op: dict[str, Any]) -> dict[str, Any]:
        params = {"path": op["uri"], **op.get("params", {})}
        answer = self.client.send(Call("GET", "/v1/read", op["uri"], "read", params))
        return {"worker": answer.worker, **_digest(answer.response.content)}

    def get(self, op: dict[str, Any]) -> dict[str, Any]:
        started = time.monotonic()
        url = self.client.url(op["worker"]) + op["path"]
        headers = op.get("headers", {})
        response = self.http.get(url, params=op["params"], headers=headers)
        took = time.monotonic() - started
        revision = response.headers.get("X-Dora-Revision")
        return {
            "status": response.status_code,
            "seconds": took,
            "revision": revision,
            **_digest(response.content),
        }

    def write(self, op: dict[str, Any]) -> dict[str, Any]:
        data = op["text"].encode()
        params = {"path": op["uri"]}
        call = Call("PUT", "/v1/write", op["uri"], "write", params, False, lambda: data)
        if "worker" in op:
            self.client.send_to(op["worker"], call)
            return {"worker": op["worker"], "revision": self.client.revision}
        answer = self.client.send(call)
        return {"worker": answer.worker, "revision": self.client.revision}

    def s3(self, op: dict[str, Any]) -> dict[str, Any]:
        import s3fs

        if self._s3 is None:
            self._s3 = s3fs.S3FileSystem(
                endpoint_url=self.config.get(s3_keys.ENDPOINT),
                key=self.config.get(s3_keys.ACCESS_KEY_ID),
                secret=self.config.get(s3_keys.SECRET_ACCESS_KEY),
                skip_instance_cache=True,
            )
        started = time.monotonic()
        data: bytes = self._s3.cat(op["uri"])
        return {"seconds": time.monotonic() - started, **_digest(data)}

    def stats(self, op: dict[str, Any]) -> dict[str, Any]:
        done = self.client.counters.snapshot()
        return {"failovers": done.failovers, "unreachable": done.unreachable}

    def cat(self, op: dict[str, Any]) -> dict[str, Any]:
        fs = DoraFileSystem(config=self.config)
        data: bytes = fs.cat_file(op["uri"])
        return _digest(data)

    def run(self, op: dict[str, Any]) -> dict[str, Any]:
        try:
            answer: dict[str, Any] = getattr(self, op["op"])(op)
        except (OSError, httpx.HTTPError) as exc:
            return _failure(exc)
        return answer


def main(argv: list[str]) -> int:
    request = json.loads(argv[0])
    config = load_config(build_registry(), environ={}, defines=request["defines"])
    probe = Probe(config)
    print(json.dumps([probe.run(op) for op in request["ops"]]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
