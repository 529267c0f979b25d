"""Kubernetes exec probe for a doracache worker that listens on loopback only.

The kubelet sends httpGet probes to the pod IP, which a worker bound to 127.0.0.1 (the sidecar
default) does not listen on, so the probe runs in the container and asks the worker directly.

Usage: python3 probe.py PORT PATH   (e.g. 28080 /readyz). Exit status 0 on a 2xx answer, else 1.
Sends the bearer token from DORA_WORKER_SECURITY_TOKEN when it is set.
"""

import os
import sys
import urllib.request


def main(argv: list[str]) -> int:
    port, path = argv[1], argv[2]
    headers = {}
    token = os.environ.get("DORA_WORKER_SECURITY_TOKEN")
    if token:
        headers["Authorization"] = "Bearer " + token
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=float(os.environ.get("PROBE_TIMEOUT", "3"))):
            return 0
    except OSError as exc:  # URLError, HTTPError (non-2xx) and timeouts are all OSErrors
        print(f"GET {path}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
