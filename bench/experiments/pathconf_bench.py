"""Per-path rules (``dora.worker.path.conf``) against request latency: WebHDFS GETFILESTATUS
and a warm 4 KB REST read of one local file, with no rules and with ``--rules`` rules none of
which matches the file (every one of them is passed over by a scan).

Run with ``.venv/bin/python -m bench.experiments.pathconf_bench`` (``--rules``, ``--calls``). Calls
go
through the worker's ASGI app in process (httpx's ASGI transport): what is measured is the
app's work per request, not a socket. Prints the median (p50) and p90 per call in ms.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

import httpx

from config import load_config
from worker import assembly
from worker.api.app import create_app
from worker.keys import build_registry

SYNC = "dora.user.file.metadata.sync.interval"


def rules(count: int, base: str) -> str:
    """``count`` rules on sibling prefixes of the file's directory, none of them its own."""
    return ", ".join(f"{base}/other-{i:05d} {SYNC}=0" for i in range(count))


async def measure(
    client: httpx.AsyncClient, url: str, params: dict[str, str], calls: int
) -> list[float]:
    for _ in range(20):  # warm: status cached, pages cached, code paths hot
        (await client.get(url, params=params)).raise_for_status()
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        (await client.get(url, params=params)).raise_for_status()
        times.append((time.perf_counter() - start) * 1000)
    return times


async def run(count: int, calls: int) -> None:
    with tempfile.TemporaryDirectory(prefix="pathconf-bench-") as temp:
        data = Path(temp) / "data"
        data.mkdir()
        (data / "f").write_bytes(b"x" * 4096)
        config = load_config(
            build_registry(),
            environ={},
            defines=[
                f"dora.work.dir={temp}/work",
                f"dora.worker.ufs.roots=file://{data}",
                f"dora.worker.path.conf={rules(count, f'file://{data}')}",
            ],
        )
        service = assembly.open_service(config)
        try:
            transport = httpx.ASGITransport(app=create_app(service))
            async with httpx.AsyncClient(transport=transport, base_url="http://w") as client:
                status = await measure(
                    client, f"/webhdfs/v1/file{data}/f", {"op": "GETFILESTATUS"}, calls
                )
                read = await measure(client, "/v1/read", {"path": f"file://{data}/f"}, calls)
        finally:
            service.close()
    for what, times in (("GETFILESTATUS", status), ("read 4 KB", read)):
        deciles = statistics.quantiles(times, n=10)
        print(
            f"{count:>6} rules  {what:<14} p50 {statistics.median(times):7.3f} ms"
            f"   p90 {deciles[8]:7.3f} ms   ({calls} calls)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rules", type=int, default=20_000)
    parser.add_argument("--calls", type=int, default=500)
    args = parser.parse_args()
    for count in (0, args.rules):
        asyncio.run(run(count, args.calls))


if __name__ == "__main__":
    main()
