"""What a ``store.url`` names: memory, one Redis server, a Redis Cluster or a Sentinel set.

Schemes (README, "Configuration"):

* ``memory://`` - in this process (one replica).
* ``redis://[user:password@]host:port/db``, ``rediss://`` (TLS), ``unix:///path.sock``.
* ``redis+cluster://host:port[,host:port...]``, ``rediss+cluster://`` - a Redis Cluster;
  the hosts are seeds, the client learns the rest. ``redis://`` with
  ``store.cluster = true`` means the same.
* ``redis+sentinel://host:26379[,host:26379...]/service[/db]``, ``rediss+sentinel://``
  - the master Sentinel names ``service``.

Parsed here, beside the config, so the config can refuse a bad URL with a clear message
before anything connects, and the store builds its client from the same reading.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal
from urllib.parse import unquote

Kind = Literal["memory", "single", "cluster", "sentinel"]
STORE_SCHEMES = (
    "memory",
    "redis",
    "rediss",
    "unix",
    "redis+cluster",
    "rediss+cluster",
    "redis+sentinel",
    "rediss+sentinel",
)


@dataclass(frozen=True)
class StoreUrl:
    kind: Kind
    tls: bool
    hosts: tuple[tuple[str, int], ...] = ()
    username: str | None = None
    password: str | None = None
    db: int = 0
    service: str = ""


def redacted(url: str) -> str:
    """``url`` without its user:password and query, safe to log (several hosts allowed)."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    netloc, slash, path = rest.partition("/")
    netloc = netloc.rpartition("@")[2]
    return f"{scheme}://{netloc}{slash}{path.partition('?')[0]}"


def _host_port(text: str, default_port: int, url: str) -> tuple[str, int]:
    host, port = text, str(default_port)
    if text.startswith("["):  # an IPv6 literal: [::1]:6379
        host, _, rest = text[1:].partition("]")
        if rest:
            port = rest.removeprefix(":")
    elif ":" in text:
        host, _, port = text.rpartition(":")
    if not host:
        raise ValueError(f"store url names an empty host: {redacted(url)!r}")
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"store url has a bad port {port!r}: {redacted(url)!r}")
    return host, int(port)


def _db(text: str, url: str) -> int:
    if not text:
        return 0
    if not text.isdigit():
        raise ValueError(f"store url database must be a number, got {text!r}: {redacted(url)!r}")
    return int(text)


def parse_store_url(url: str, cluster: bool = False) -> StoreUrl:
    """Read ``url``; a ValueError says what is wrong (never with the password in it)."""
    scheme, sep, rest = url.partition("://")
    if not sep or scheme not in STORE_SCHEMES:
        schemes = ", ".join(f"{s}://" for s in STORE_SCHEMES)
        raise ValueError(f"store url must start with one of {schemes}, got {redacted(url)!r}")
    if scheme == "memory":
        if cluster:
            raise ValueError("store.cluster needs a Redis url, not memory://")
        return StoreUrl("memory", tls=False)
    if scheme == "unix":
        if cluster:
            raise ValueError("store.cluster: a Redis Cluster cannot be reached over unix://")
        return StoreUrl("single", tls=False)
    base, _, variant = scheme.partition("+")
    tls = base == "rediss"
    kind: Kind = "sentinel" if variant == "sentinel" else "single"
    if variant == "cluster" or cluster:
        if kind == "sentinel":
            raise ValueError("store.cluster = true does not go with a redis+sentinel:// url")
        kind = "cluster"
    rest = rest.partition("?")[0]
    netloc, _, path = rest.partition("/")
    userinfo, at, hostlist = netloc.rpartition("@")
    username = password = None
    if at:
        user, colon, secret = userinfo.partition(":")
        username = unquote(user) or None
        password = unquote(secret) if colon else None
    if not hostlist:
        raise ValueError(f"store url names no host: {redacted(url)!r}")
    default_port = 26379 if kind == "sentinel" else 6379
    hosts = tuple(_host_port(h, default_port, url) for h in hostlist.split(","))
    if kind == "single" and len(hosts) > 1:
        raise ValueError(
            f"store url names several hosts: use redis+cluster:// or redis+sentinel://, "
            f"got {redacted(url)!r}"
        )
    segments = [s for s in path.split("/") if s]
    service = ""
    if kind == "sentinel":
        if not segments:
            raise ValueError(
                "store url must name the Sentinel service, "
                f"e.g. redis+sentinel://host:26379/mymaster/0, got {redacted(url)!r}"
            )
        service = unquote(segments.pop(0))
    if len(segments) > 1:
        raise ValueError(f"store url has an unexpected path: {redacted(url)!r}")
    db = _db(segments[0] if segments else "", url)
    if kind == "cluster" and db:
        raise ValueError(f"a Redis Cluster has only database 0, got {redacted(url)!r}")
    return StoreUrl(kind, tls, hosts, username, password, db, service)
