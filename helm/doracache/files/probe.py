"""Kubernetes exec probe for a doracache worker the kubelet cannot probe itself: one that listens
on loopback only (the sidecar default), or one that requires client certificates.

The kubelet sends httpGet probes to the pod IP, which a worker bound to 127.0.0.1 does not listen
on, and presents no client certificate, so the probe runs in the container and asks the worker
directly.

Usage: python3 probe.py PORT PATH [https [CERT KEY]]   (e.g. 28080 /readyz https).
Exit status 0 on a 2xx answer, else 1. Sends the bearer token from DORA_WORKER_SECURITY_TOKEN
when it is set. Over https it presents CERT and KEY when given (mutual TLS), and, like the
kubelet's own HTTPS probes, does not verify the worker's certificate: it asks whether this
container's worker answers, on loopback, which the certificate need not name.
"""

import os
import ssl
import sys
import urllib.request


def main(argv: list[str]) -> int:
    port, path = argv[1], argv[2]
    scheme = argv[3] if len(argv) > 3 else "http"
    headers = {}
    token = os.environ.get("DORA_WORKER_SECURITY_TOKEN")
    if token:
        headers["Authorization"] = "Bearer " + token
    request = urllib.request.Request(f"{scheme}://127.0.0.1:{port}{path}", headers=headers)
    timeout = float(os.environ.get("PROBE_TIMEOUT", "3"))
    try:
        context = tls_context(argv[4:]) if scheme == "https" else None
        with urllib.request.urlopen(request, timeout=timeout, context=context):
            return 0
    except OSError as exc:  # URLError, HTTPError (non-2xx), SSLError and timeouts are OSErrors
        print(f"GET {path}: {exc}", file=sys.stderr)
        return 1


def tls_context(client_pair: list[str]) -> ssl.SSLContext:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    if client_pair:
        context.load_cert_chain(client_pair[0], client_pair[1])
    return context


if __name__ == "__main__":
    sys.exit(main(sys.argv))
