"""HTTP routes of the browser page: ``GET /``, its static files, ``GET /v1/routes``.

The page is plain HTML and JavaScript shipped inside the package (``static/``): no build
step and nothing fetched at run time. ``GET /v1/routes`` names the configured route
models for the page's picker, never the upstream URLs behind them (no open proxy).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from aiohttp import web

from proxy.config import Config

STATIC = Path(__file__).resolve().parent / "static"
CONTENT_TYPES = {
    ".html": "text/html",
    ".js": "text/javascript",
    ".css": "text/css",
}
# Served under /web/NAME; anything else is a 404 (no directory listing, no traversal).
STATIC_FILES = (
    "app.js",
    "session.js",
    "events.js",
    "audio.js",
    "view.js",
    "capture-worklet.js",
    "playback-worklet.js",
    "style.css",
)


def route_models(config: Config) -> dict[str, Any]:
    """What ``GET /v1/routes`` answers: each route's model (a name or a glob) and mode."""
    routes = [
        {"model": route.model, "pattern": route.is_glob, "mode": route.mode}
        for route in config.routes
    ]
    # The page asks for a key when connections need one (sent as a subprotocol).
    needs_key = config.auth.mode in ("api_key", "jwt")
    return {"routes": routes, "default_model": config.default_model, "auth_required": needs_key}


def _file(name: str) -> web.Response:
    path = STATIC / name
    return web.Response(
        body=path.read_bytes(),
        content_type=CONTENT_TYPES[path.suffix],
        charset="utf-8",
        headers={"Cache-Control": "no-cache"},
    )


def add_web_routes(
    app: web.Application,
    config: Config,
    *,
    enabled: bool | None = None,
    current: Callable[[], Config] | None = None,
) -> None:
    """Register the page and ``GET /v1/routes`` on ``app``.

    ``enabled`` overrides the config's ``[web] enabled`` (unset: on only without auth,
    ``Config.web_enabled``); when off nothing is registered. ``current`` gives the config
    in force, so the listing follows a reload.
    """
    if not (config.web_enabled if enabled is None else enabled):
        return
    listing = route_models(config)

    async def index(request: web.Request) -> web.Response:
        return _file("index.html")

    async def static(request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if name not in STATIC_FILES:
            raise web.HTTPNotFound()
        return _file(name)

    async def routes(request: web.Request) -> web.Response:
        return web.json_response(route_models(current()) if current else listing)

    app.router.add_get("/", index)
    app.router.add_get("/web/{name}", static)
    app.router.add_get("/v1/routes", routes)
