"""The web console: static HTML, JavaScript and CSS shipped in the package (``static/``), no
build step and nothing fetched from elsewhere, so it works offline. It draws what the REST API
answers (``worker.api.insight`` and the rest of REST v1) and computes nothing of its own.

The page and its assets carry no data, so they are served without the token; the data calls
the page makes need it. With a token configured the page asks for it once (a login form) and
keeps it in the tab's session storage, sending it as an ``Authorization`` header: it never goes
into a URL, so never into an access log.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

from starlette.responses import RedirectResponse, Response

from worker.api.errors import error_response
from worker.api.surface import Route, Surface
from worker.common.errors import NotFound
from worker.service import WorkerService

PREFIX = "/ui"
ASSETS = {
    "": ("index.html", "text/html; charset=utf-8"),
    "console.js": ("console.js", "text/javascript; charset=utf-8"),
    "charts.js": ("charts.js", "text/javascript; charset=utf-8"),
    "console.css": ("console.css", "text/css; charset=utf-8"),
}
"""What ``/ui/<name>`` serves: a fixed table, so no request names a file of its own."""

HEADERS = {
    # Scripts and styles from this origin only, no inline script: an injected string in a
    # file name the page shows cannot run.
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-cache",
}


@cache
def _asset(name: str) -> bytes:
    return resources.files("worker.api").joinpath("static", name).read_bytes()


async def root(service: WorkerService) -> Response:
    return RedirectResponse(f"{PREFIX}/", status_code=302)


async def asset(service: WorkerService, name: str = "") -> Response:
    found = ASSETS.get(name)
    if found is None:
        raise NotFound(f"{PREFIX}/{name}: no such console file")
    file_name, media_type = found
    return Response(_asset(file_name), media_type=media_type, headers=HEADERS)


async def index(service: WorkerService) -> Response:
    return await asset(service, "")


SURFACE = Surface(
    name="console",
    prefix=PREFIX,
    routes=(
        Route("GET", "/", root, {"include_in_schema": False}),
        Route("GET", f"{PREFIX}/", index, {"include_in_schema": False}),
        Route("GET", f"{PREFIX}/{{name}}", asset, {"include_in_schema": False}),
    ),
    render_error=error_response,
    open_paths=frozenset({"/", *(f"{PREFIX}/{name}" for name in ASSETS)}),
)
"""The console: ``/`` sends a browser to ``/ui/``."""
