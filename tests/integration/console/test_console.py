"""The web console in a real headless browser (Debian's chromium driven by Playwright), against
three real workers on SeaweedFS joined through a real etcd, each with a token. A screenshot of
each view goes to ``build/test-artifacts/console/``."""

import contextlib
import re
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration.cluster.cluster_support import ClusterWorker
from tests.integration.conftest import BUCKET
from tests.integration.harness import wait_for
from worker.devlab.local.etcd import LocalEtcd
from worker.devlab.local.netproxy import TcpProxy
from worker.devlab.local.s3 import ACCESS_KEY, SECRET_KEY, LocalS3

pytestmark = [pytest.mark.integration, pytest.mark.slow]

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
TOKEN = "console-test-token"
ARTIFACTS = Path(__file__).resolve().parents[3] / "build" / "test-artifacts" / "console"
# As the machine's notes say: without the background-networking flags chromium keeps trying
# hosts this sandbox cannot reach.
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
UFS_LATENCY_S = 0.15
"""Between the first worker and SeaweedFS: a load job of 40 files then runs for seconds, long
enough for a second job to wait in the queue and be cancelled from the page."""

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
if not Path(CHROMIUM).exists():
    pytest.skip("chromium is not installed (make test installs it)", allow_module_level=True)
# A worker's first UFS calls (a cold S3 client behind the delaying proxy) on a loaded machine
# take seconds: every expectation waits up to 30 s (5 s by default), still failing when the
# page never shows what it should.
sync_api.expect.set_options(timeout=30_000)


@pytest.fixture(scope="module")
def prefix(seaweedfs: LocalS3) -> str:
    return f"s3://{BUCKET}/console-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def files(seaweedfs: LocalS3, prefix: str) -> dict[str, bytes]:
    """Three files to read, 40 small ones to load, 5 more for a job to cancel."""
    s3 = seaweedfs.client()
    made = {f"{prefix}/read/f{i}.bin": bytes([i]) * (300_000 + i) for i in range(3)}
    made |= {f"{prefix}/load/p{i:02}.bin": bytes([i]) * 20_000 for i in range(40)}
    made |= {f"{prefix}/queued/q{i}.bin": b"q" * 1000 for i in range(5)}
    for uri, data in made.items():
        s3.pipe_file(uri.removeprefix("s3://"), data)
    return made


@pytest.fixture(scope="module")
def cluster(
    tmp_path_factory: pytest.TempPathFactory, seaweedfs: LocalS3
) -> Iterator[tuple[list[ClusterWorker], TcpProxy]]:
    base = tmp_path_factory.mktemp("console")
    etcd = LocalEtcd(base / "etcd").start()
    proxy = TcpProxy.to_url(seaweedfs.endpoint, latency=UFS_LATENCY_S).start()
    made: list[ClusterWorker] = []
    feed = f"seaweedfs://127.0.0.1:{seaweedfs.ports['filer.port.grpc']}/buckets/{BUCKET}"
    try:
        for i in range(3):
            endpoint = proxy.url if i == 0 else seaweedfs.endpoint
            defines = (
                f"dora.worker.ufs.roots=s3://{BUCKET}",
                f"dora.ufs.s3.endpoint={endpoint}",
                f"dora.ufs.s3.access.key.id={ACCESS_KEY}",
                f"dora.ufs.s3.secret.access.key={SECRET_KEY}",
                f"dora.worker.security.token={TOKEN}",
                "dora.worker.load.threads=1",
                "dora.worker.load.parallelism=1",
                "dora.worker.http.access.log=true",
                f"dora.ufs.change.feeds={feed}",
            )
            data = base / f"data{i}"
            data.mkdir()
            made.append(ClusterWorker(base / f"w{i}", data, etcd, *defines).start())
        for worker in made:
            worker.http.headers["Authorization"] = f"Bearer {TOKEN}"
            wait_for(lambda w=worker: w.metric("dora_cluster_etcd_connected") == 1)  # type: ignore[misc]
        yield made, proxy
    finally:
        for worker in made:
            with contextlib.suppress(httpx.HTTPError):
                worker.http.get("/v1/stats")  # the token in its header, as the console sends it
            worker.stop()
            worker.http.close()
        proxy.stop()
        etcd.stop()
    for worker in made:
        log = worker.log()
        assert "Traceback" not in log
        assert "GET /v1/stats" in log  # the access log was on, and the token never in it
        assert TOKEN not in log


@pytest.fixture(scope="module")
def browser(cluster: tuple[list[ClusterWorker], TcpProxy]) -> Iterator[Any]:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


@contextlib.contextmanager
def tab(browser: Any, signed_in: bool) -> Iterator[Any]:
    """A fresh tab, signed in (the token in session storage, as the login form leaves it) or
    not: each test stands alone, whichever test process runs it."""
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    if signed_in:
        context.add_init_script(f"sessionStorage.setItem('dora.console.token', '{TOKEN}')")
    try:
        opened = context.new_page()
        opened.set_default_timeout(30_000)
        yield opened
    finally:
        context.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    with tab(browser, signed_in=True) as opened:
        yield opened


@pytest.fixture
def signed_out_page(browser: Any) -> Iterator[Any]:
    with tab(browser, signed_in=False) as opened:
        yield opened


def console_url(worker: ClusterWorker, view: str = "overview") -> str:
    return f"http://{worker.address}/ui/#{view}"


def shoot(page: Any, name: str) -> None:
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def sign_in(page: Any, token: str) -> None:
    page.fill("#token", token)
    page.click("#login-form button")


def test_a_wrong_token_is_refused_then_the_right_one_opens_the_overview(
    cluster: tuple[list[ClusterWorker], TcpProxy], signed_out_page: Any
) -> None:
    page = signed_out_page
    worker = cluster[0][0]
    page.goto(console_url(worker))
    sync_api.expect(page.locator("#login")).to_be_visible()
    sign_in(page, "not-the-token")
    sync_api.expect(page.locator("#login-error")).to_have_text("The token was refused.")
    shoot(page, "login-refused")
    sign_in(page, TOKEN)
    sync_api.expect(page.locator("#ready")).to_have_text("yes")
    sync_api.expect(page.locator("#roots")).to_contain_text(f"s3://{BUCKET}")
    shoot(page, "overview")
    # The page and its assets are open (they carry no data); the data is not.
    assert httpx.get(f"http://{worker.address}/ui/console.js").status_code == 200
    assert httpx.get(f"http://{worker.address}/v1/overview").status_code == 401


def test_reads_show_on_the_cache_view(
    cluster: tuple[list[ClusterWorker], TcpProxy], page: Any, files: dict[str, bytes]
) -> None:
    worker = cluster[0][0]
    page.goto(console_url(worker, "cache"))
    shown = page.locator("#bytes-from-cache")
    sync_api.expect(shown).not_to_have_text("")
    before = shown.inner_text()
    for uri, data in files.items():
        if "/read/" in uri:
            for _ in range(2):  # the second read is served from the cache
                answer = worker.http.get("/v1/read", params={"path": uri})
                assert answer.content == data
    sync_api.expect(shown).not_to_have_text(before)
    sync_api.expect(page.locator("#dirs")).to_contain_text("in service")
    sync_api.expect(page.locator("#pinned")).to_contain_text(" of ")
    sync_api.expect(page.locator("#admitted")).not_to_have_text("0")  # the reads above
    sync_api.expect(page.locator("#quota-evictions")).to_have_text("0")
    # Drawn from the worker's samples (one every 5 s): a line once three are in.
    line = page.locator("#chart-bytes path").first
    sync_api.expect(line).to_have_attribute("d", re.compile(r"^M[^M]*L"), timeout=30_000)
    shoot(page, "cache")


def test_the_files_view_lists_what_was_read_and_looks_one_up(
    cluster: tuple[list[ClusterWorker], TcpProxy], page: Any, files: dict[str, bytes]
) -> None:
    worker = cluster[0][0]
    read = sorted(uri for uri in files if "/read/" in uri)
    for uri in read:
        assert worker.http.get("/v1/read", params={"path": uri}).content == files[uri]
    page.goto(console_url(worker, "files"))
    table = page.locator("#top-files")
    for uri in read:
        sync_api.expect(table).to_contain_text(uri)
    sync_api.expect(table).to_contain_text("100.0%")
    assert worker.http.post("/v1/pin", params={"path": read[0]}).is_success
    page.fill("#search-path", read[0])
    page.click("#search button")
    sync_api.expect(page.locator("#search-result")).to_contain_text("(100.0% cached), pinned")
    page.fill("#search-path", f"s3://{BUCKET}/no-such-file")
    page.click("#search button")
    sync_api.expect(page.locator("#search-result")).to_contain_text("NotFound")
    shoot(page, "files")


def test_a_load_job_reaches_100_percent_and_a_queued_one_is_cancelled(
    cluster: tuple[list[ClusterWorker], TcpProxy], page: Any, prefix: str, files: dict[str, bytes]
) -> None:
    worker = cluster[0][0]
    page.goto(console_url(worker, "jobs"))
    page.fill("#load-path", f"{prefix}/load")
    page.click("#load-form button")
    page.fill("#load-path", f"{prefix}/queued")
    page.click("#load-form button")
    queued = page.locator("#jobs tr", has_text=f"{prefix}/queued")
    sync_api.expect(queued.locator(".state-queued")).to_be_visible()
    proxy = cluster[1]
    proxy.pause()  # the running job waits on the UFS, so the second one stays queued
    try:
        queued.locator("button.cancel").click()
        sync_api.expect(queued.locator("td").nth(2)).to_have_text("cancelled")
    finally:
        proxy.resume()
    loaded = page.locator("#jobs tr", has_text=f"{prefix}/load")
    sync_api.expect(loaded.locator("td").nth(2)).to_have_text("done", timeout=120_000)
    sync_api.expect(loaded).to_contain_text("100.0%")
    sync_api.expect(loaded).to_contain_text("40/40")
    shoot(page, "jobs")
    jobs = worker.http.get("/v1/jobs").json()["jobs"]
    states = {job["path"]: job["state"] for job in jobs}
    assert states == {f"{prefix}/load": "done", f"{prefix}/queued": "cancelled"}
    uri = f"{prefix}/load/p07.bin"
    assert worker.http.get("/v1/status", params={"path": uri}).json()["cached_bytes"] == 20_000


def test_the_cluster_view_lists_every_worker(
    cluster: tuple[list[ClusterWorker], TcpProxy], page: Any
) -> None:
    workers = cluster[0]
    page.goto(console_url(workers[1], "cluster"))
    rows = page.locator("#workers tr.worker")
    sync_api.expect(rows).to_have_count(3)
    for worker in workers:
        row = page.locator("#workers tr.worker", has_text=worker.address)
        sync_api.expect(row).to_contain_text("online")
        link = row.locator("a")
        assert link.get_attribute("href") == f"http://{worker.address}/ui/"
    sync_api.expect(page.locator("#cluster-summary")).to_contain_text("3 of 3 workers online")
    shoot(page, "cluster")


def test_the_overview_shows_each_feed_s_lag(
    cluster: tuple[list[ClusterWorker], TcpProxy], page: Any, prefix: str, seaweedfs: LocalS3
) -> None:
    seaweedfs.client().pipe_file(f"{prefix}/outside.txt".removeprefix("s3://"), b"outside")
    # Whichever worker consumes the filer's events, every worker measures their lag.
    worker = cluster[0][2]
    page.goto(console_url(worker))
    row = page.locator("#feed-lag tr.feed-source")
    sync_api.expect(row).to_contain_text(f"/buckets/{BUCKET}")
    sync_api.expect(row.locator(".last-lag")).to_have_text(re.compile(r"^[0-9.]+ ms$"))
    shoot(page, "feed-lag")
