"""The browser ``Origin`` check: a page on another site must not spend this proxy.

A client without ``Origin`` is not a browser (and cannot be driven by a web page).
A browser is allowed from the proxy's own page (same host) or a listed origin.
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
    return parts.scheme in ("http", "https") and parts.netloc == host.strip().lower()
