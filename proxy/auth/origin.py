"""The browser ``Origin`` check: a page on another site must not spend this proxy.

A client without ``Origin`` is not a browser (and cannot be driven by a web page).
A browser is allowed from the proxy's own page or a listed origin. "Own page" compares
host names, not ports: a reverse proxy in front often rewrites ``Host`` without the
port the browser used, and another port of the same host is no other site.
"""

from __future__ import annotations

from collections.abc import Collection
from urllib.parse import urlsplit


def origin_allowed(origin: str | None, host: str, allowed: Collection[str]) -> bool:
    if origin is None:
        return True
    origin = origin.strip().lower().rstrip("/")
    if origin in allowed:
        return True
    parts = urlsplit(origin)
    own = urlsplit("//" + host.strip().lower()).hostname
    return parts.scheme in ("http", "https") and own is not None and parts.hostname == own
