"""How long the console takes to show each view with many cached files, in Debian's chromium.

    .venv/bin/python -m bench.console_bench [--files 10000] [--repeat 5]

One worker process over a local directory of ``--files`` 1 KB files in 100 directories, all
loaded into the cache by a load job and each read once (so the most-read table is full). Each
view is opened in a fresh browser context, timed from navigation to its content drawn; beside
it, the browser opening the raw ``/v1/stats`` JSON (a page that only fetches and shows text: the
floor any page over this worker pays). Medians of ``--repeat`` runs with min-max.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from worker.devlab.local.s3 import free_port

CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
VIEWS = {
    "overview": "#overview-cards .card",
    "cache": "#chart-bytes .legend",
    "files": "#top-files tr:nth-child(26)",
    "jobs": "#jobs tr:nth-child(2)",
}
"""Each view and the element whose appearance means it is drawn."""


def make_files(root: Path, count: int) -> list[str]:
    uris = []
    for i in range(count):
        path = root / f"d{i % 100:02}" / f"f{i:05}.bin"
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(i.to_bytes(4, "big") * 256)
        uris.append(f"file://{path}")
    return uris


def start_worker(work: Path, root: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    state = work / "state.json"
    dora = str(Path(sys.executable).with_name("dora"))
    args = [dora, "worker", "start", f"-Ddora.work.dir={work}", f"-Ddora.worker.http.port={port}",
            f"-Ddora.worker.ufs.roots=file://{root}", "--state-file", str(state)]  # fmt: skip
    process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while not state.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            raise SystemExit("the worker did not start")
        time.sleep(0.05)
    return process, f"127.0.0.1:{port}"


def warm(address: str, root: Path, uris: list[str]) -> None:
    with httpx.Client(base_url=f"http://{address}", timeout=120) as client:
        job = client.post("/v1/load", params={"path": f"file://{root}", "recursive": "true"})
        job_id = job.json()["id"]
        while client.get(f"/v1/load/{job_id}").json()["state"] in ("queued", "running"):
            time.sleep(0.2)
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda uri: client.get("/v1/read", params={"path": uri}), uris))
        print(json.dumps(client.get("/v1/stats").json()), flush=True)


def timed(browser: Any, url: str, ready: Callable[[Any], None]) -> float:
    context = browser.new_context()
    try:
        page = context.new_page()
        started = time.perf_counter()
        page.goto(url)
        ready(page)
        return time.perf_counter() - started
    finally:
        context.close()


def report(name: str, seconds: list[float], floor: float | None) -> None:
    median = statistics.median(seconds) * 1000
    ratio = "" if floor is None else f"  ({median / floor:.1f}x the raw JSON page)"
    low, high = min(seconds) * 1000, max(seconds) * 1000
    print(f"{name:>10}: {median:7.1f} ms median ({low:.1f}-{high:.1f}){ratio}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    with tempfile.TemporaryDirectory(prefix="console-bench-") as temp:
        root, work = Path(temp) / "data", Path(temp) / "work"
        root.mkdir()
        uris = make_files(root, args.files)
        process, address = start_worker(work, root)
        try:
            warm(address, root, uris)
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
                raw = [
                    timed(
                        browser, f"http://{address}/v1/stats", lambda p: p.wait_for_selector("pre")
                    )
                    for _ in range(args.repeat)
                ]
                report("raw JSON", raw, None)
                floor = statistics.median(raw) * 1000
                for view, selector in VIEWS.items():
                    url = f"http://{address}/ui/#{view}"
                    runs = [
                        timed(browser, url, lambda p, s=selector: p.wait_for_selector(s))  # type: ignore[misc]
                        for _ in range(args.repeat)
                    ]
                    report(view, runs, floor)
                browser.close()
        finally:
            process.terminate()
            process.wait(60)
    return 0


if __name__ == "__main__":
    sys.exit(main())
