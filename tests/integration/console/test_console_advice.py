"""The console's curve of hit ratio by capacity (``/v1/cache/advice``) in a real headless
browser (Debian's chromium driven by Playwright) against a real worker process over a local
directory. A screenshot goes to ``build/test-artifacts/console/``."""

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.harness import WorkerProcess

pytestmark = pytest.mark.integration

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parents[3] / "build" / "test-artifacts" / "console"
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
MB = 1 << 20

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
if not Path(CHROMIUM).exists():
    pytest.skip("chromium is not installed (make test installs it)", allow_module_level=True)


@pytest.fixture
def worker(tmp_path: Path) -> Iterator[WorkerProcess]:
    data, work = tmp_path / "data", tmp_path / "work"
    data.mkdir()
    work.mkdir()
    (data / "f.bin").write_bytes(os.urandom(3 * MB))
    process = WorkerProcess(work, f"dora.worker.ufs.roots=file://{data}")
    for _ in range(11):  # 3 pages stored, then 30 served, each 2 pages after its last read
        assert process.http.get("/v1/read", params={"path": f"file://{data}/f.bin"}).is_success
    yield process
    process.stop()


@pytest.fixture
def page(tmp_path: Path) -> Iterator[Any]:
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            opened = browser.new_context(viewport={"width": 1280, "height": 1400}).new_page()
            opened.set_default_timeout(30_000)
            yield opened
        finally:
            browser.close()


def test_the_cache_view_plots_the_curve_and_says_what_a_target_needs(
    worker: WorkerProcess, page: Any
) -> None:
    page.goto(f"http://{worker.address}/ui/#cache")
    summary = page.locator("#advice-summary")
    sync_api.expect(summary).to_contain_text(
        "90.0% hit ratio needs 3.0 MB; at 1.0 GB (now) LRU would hit 90.9%."
    )
    # 0% up to 2 MB, 30 of 33 reads from 3 MB on, level to the axis' end at 3.75 MB; the
    # target is marked at 3 MB, the capacity now (1 GB) lies beyond the axis.
    curve = page.locator("#chart-advice path.curve")
    d = "M44.0,170.0L400.3,170.0L578.4,22.7L712.0,22.7"
    sync_api.expect(curve).to_have_attribute("d", d)
    sync_api.expect(page.locator("#chart-advice text", has_text="90.0%")).to_have_count(1)
    sync_api.expect(page.locator("#chart-advice text", has_text="now")).to_have_count(0)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.locator("#chart-advice").screenshot(path=str(ARTIFACTS / "advice.png"))
