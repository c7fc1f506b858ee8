"""What a config routes where, for people: check-config's listing and serve's start-up log.

Upstream URLs are shown without credentials or query, and headers by name only: their
values are often bearer tokens, and logs are widely readable.
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

from proxy.config_model import Config
from proxy.config_route import Route
from proxy.config_store_url import redacted
from proxy.logging import get_logger


def safe_upstream(url: str) -> str:
    """``url`` without user:password and query (where tokens hide)."""
    parts = urlsplit(url)
    if parts.hostname is None:
        return url
    host = parts.hostname if parts.port is None else f"{parts.hostname}:{parts.port}"
    if ":" in parts.hostname:  # an IPv6 literal
        host = f"[{parts.hostname}]" + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def _describe(route: Route) -> dict[str, object]:
    return {
        "model": route.model,
        "upstream": safe_upstream(route.upstream),
        "mode": route.mode,
        "upstream_model": route.upstream_model,
        "header_names": sorted(route.headers),
        "max_sessions": route.max_sessions,
    }


def route_lines(config: Config) -> list[str]:
    lines = []
    for i, route in enumerate(config.routes):
        d = _describe(route)
        extra = [f"{k}={v}" for k, v in d.items() if k not in ("model", "upstream") and v]
        lines.append(f"routes.{i}: {route.model} -> {d['upstream']} " + " ".join(extra))
    if config.default_model:
        lines.append(f"default_model: {config.default_model}")
    lines.append(f"store: {redacted(config.store.url)}")
    lines.append("auth: " + " ".join(f"{k}={v}" for k, v in _auth(config).items() if v))
    return [line.rstrip() for line in lines]


def _auth(config: Config) -> dict[str, object]:
    """Who may connect, by key id only (never a digest)."""
    auth = config.auth
    return {
        "mode": auth.mode or "unset",
        "key_ids": ",".join(k.id for k in auth.keys),
        "jwt": ",".join(
            alg
            for alg, on in (("HS256", auth.jwt_hs256_secret), ("RS256", auth.jwt_rs256_public_key))
            if on
        ),
        "allowed_origins": ",".join(auth.allowed_origins),
        "metrics_token": "required" if auth.metrics_token_sha256 else "",
        "web_page": "on" if config.web_enabled else "off",
    }


def log_routes(config: Config) -> None:
    log = get_logger()
    for i, route in enumerate(config.routes):
        log.info("route", index=i, **_describe(route))
    log.info("auth", **_auth(config))
