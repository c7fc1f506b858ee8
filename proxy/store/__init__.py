"""Session stores (docs/architecture.md): pick one from ``store.url``.

The Redis backend is imported only when ``store.url`` names Redis, so a memory-only
deployment never imports redis.
"""

from __future__ import annotations

from proxy.config import StoreConfig
from proxy.config_store_url import parse_store_url
from proxy.metrics import Metrics
from proxy.store.base import LeaseLost, SessionRecord, SessionStore, StoreUnavailable
from proxy.store.ids import check_session_id, valid_session_id
from proxy.store.memory import MemoryStore

__all__ = [
    "LeaseLost",
    "SessionRecord",
    "SessionStore",
    "StoreUnavailable",
    "check_session_id",
    "open_store",
    "valid_session_id",
]


async def open_store(config: StoreConfig, metrics: Metrics | None = None) -> SessionStore:
    """Open the store ``config.url`` names (``proxy/config_store_url.py``): in memory,
    one Redis server, a Redis Cluster or a Sentinel master. Never fails because Redis
    is down.

    The proxy must start and serve live sessions during a Redis outage:
    a Redis store connects lazily and recovers on its own once Redis answers.
    """
    # A ValueError names what is wrong with the url (the config refuses it first).
    if parse_store_url(config.url, config.cluster).kind == "memory":
        store: SessionStore = MemoryStore(config, metrics)
    else:
        from proxy.store.redis import RedisStore  # only here: see the module docstring

        store = RedisStore(config, metrics)
    # Sets the store_up gauge right away; a down Redis only makes this return False.
    await store.healthy()
    return store
