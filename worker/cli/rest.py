"""REST calls on one worker as a command makes them: the client's token, TLS files and timeout
(``dora.user.*``), and an error answer or an unreachable worker as a ``DoraError``."""

from __future__ import annotations

from typing import Any

import httpx

from config import Config
from worker.client.errors import WorkerUnavailable, error_from_response
from worker.client.options import ClientOptions
from worker.common.tls import refuse_plaintext


class WorkerCalls:
    """JSON calls on ``worker`` (``host:port`` or a URL). Not thread-safe (one command at a
    time); ``close()`` when done. Raises ValueError for a malformed address or option, and
    refuses to send the token in clear beyond loopback unless allowed."""

    def __init__(self, config: Config, worker: str) -> None:
        options = ClientOptions.resolve(config, workers=[worker])
        headers = {"Authorization": f"Bearer {options.token}"} if options.token else {}
        self.worker = worker
        if options.token:
            refuse_plaintext(options.workers[0], worker, options.allow_plaintext)
        self.http = httpx.Client(
            base_url=options.workers[0],
            headers=headers,
            timeout=options.timeout_s,
            verify=options.tls.context(),
        )

    def call(self, method: str, route: str, params: dict[str, str] | None = None) -> Any:
        """The JSON answer; DoraError for an error answer or an unreachable worker."""
        try:
            response = self.http.request(method, route, params=params)
        except httpx.TransportError as exc:
            raise WorkerUnavailable(f"{method} {route}: worker {self.worker}: {exc}") from exc
        if response.is_error:
            raise error_from_response(response, self.worker, f"{method} {route}")
        return response.json()

    def close(self) -> None:
        self.http.close()
