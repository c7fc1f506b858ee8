"""The redis-py client ``store.url`` names: one server, a Redis Cluster or a Sentinel master.

Connections are lazy (nothing connects here), so the proxy starts during a Redis
outage. A pooled connection goes stale when Redis restarts or fails over, and its
first use only finds out then, so a command that meets a ConnectionError runs once
more on a fresh connection. Timeouts are not retried there: a timed-out command may
have run, and the caller's ``store.timeout_s`` budget is spent anyway. A Cluster
client retries in its own way (connection errors, timeouts, a cluster going down:
reload the slot map and try again); ``store.timeout_s`` bounds that too
(``proxy/store/redis.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis.asyncio as aioredis
from redis.asyncio.cluster import ClusterNode, RedisCluster
from redis.asyncio.retry import Retry
from redis.asyncio.sentinel import Sentinel
from redis.backoff import ExponentialWithJitterBackoff
from redis.exceptions import ConnectionError as RedisConnectionError

from proxy.config import StoreConfig
from proxy.config_store_url import StoreUrl, parse_store_url

# Probe connections idle this long before reuse (half-open TCP after a network blip).
HEALTH_CHECK_INTERVAL_S = 15
# A Cluster retries a little more: during a failover the client reloads the slot map
# between attempts.
SINGLE_RETRIES, CLUSTER_RETRIES = 1, 3

RedisClient = aioredis.Redis | RedisCluster


@dataclass(frozen=True)
class OpenedClient:
    """The client for the data, and the Sentinel connections it asks (closed with it)."""

    client: RedisClient
    sentinels: tuple[aioredis.Redis, ...] = ()

    async def aclose(self) -> None:
        await self.client.aclose()
        for sentinel in self.sentinels:
            await sentinel.aclose()


def read_password(config: StoreConfig, url: StoreUrl) -> str | None:
    """The password from the url, else from ``store.password_file`` (a mounted Secret)."""
    if not config.password_file:
        return url.password
    try:
        text = Path(config.password_file).read_text()
    except OSError as exc:
        raise ValueError(f"store.password_file: cannot read it ({exc.strerror})") from None
    # Secrets mounted from a file often end with a newline that is not part of it.
    return text.rstrip("\r\n")


def _retry(config: StoreConfig, retries: int) -> Retry:
    backoff = ExponentialWithJitterBackoff(base=0.01, cap=config.timeout_s / 4)
    return Retry(backoff, retries, supported_errors=(RedisConnectionError,))


def _tls_options(config: StoreConfig) -> dict[str, Any]:
    options: dict[str, Any] = {"ssl": True}
    if config.tls_ca_file:
        options["ssl_ca_certs"] = config.tls_ca_file
    if config.tls_cert_file:
        options["ssl_certfile"] = config.tls_cert_file
        options["ssl_keyfile"] = config.tls_key_file
    return options


def connection_options(config: StoreConfig, url: StoreUrl) -> dict[str, Any]:
    """What every connection to a data node gets: timeouts, auth, TLS."""
    options: dict[str, Any] = {
        "socket_timeout": config.timeout_s,
        "socket_connect_timeout": config.timeout_s,
        "health_check_interval": HEALTH_CHECK_INTERVAL_S,
        "username": url.username,
        "password": read_password(config, url),
    }
    if url.tls:
        options.update(_tls_options(config))
    return options


def open_client(config: StoreConfig) -> OpenedClient:
    url = parse_store_url(config.url, config.cluster)
    if url.kind == "cluster":
        cluster = RedisCluster(
            startup_nodes=[ClusterNode(host, port) for host, port in url.hosts],
            retry=_retry(config, CLUSTER_RETRIES),
            **connection_options(config, url),
        )
        return OpenedClient(cluster)
    if url.kind == "sentinel":
        return _sentinel_master(config, url)
    # from_url reads the host, db or unix path and picks TLS from rediss://; the
    # options add the rest.
    options = connection_options(config, url)
    options.pop("ssl", None)
    client: aioredis.Redis = aioredis.Redis.from_url(
        config.url, retry=_retry(config, SINGLE_RETRIES), **options
    )
    return OpenedClient(client)


def _sentinel_master(config: StoreConfig, url: StoreUrl) -> OpenedClient:
    """The master Sentinel names; the pool asks the Sentinels again after a failover."""
    options = connection_options(config, url)
    # The Sentinels get the same timeouts and TLS, not the data nodes' password.
    sentinel_options = {k: v for k, v in options.items() if k not in ("username", "password")}
    # redis-py leaves Sentinel.__init__ unannotated.
    sentinel = Sentinel(  # type: ignore[no-untyped-call]
        list(url.hosts), sentinel_kwargs=sentinel_options, db=url.db, **options
    )
    master: aioredis.Redis = sentinel.master_for(url.service, retry=_retry(config, SINGLE_RETRIES))
    return OpenedClient(master, tuple(sentinel.sentinels))
