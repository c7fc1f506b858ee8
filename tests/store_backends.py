"""The store contract's fixtures (tests/test_store_*.py): a store factory for each
backend, memory, a real Redis and a real Redis Cluster, a store from it, a raw client of
the Redis under it, and the ``store_up`` gauge."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
import redis.asyncio as aioredis

from proxy.config import StoreConfig
from proxy.metrics import Metrics
from proxy.store import open_store
from proxy.store.base import SessionStore
from tests.redis_server import RedisServer

MakeStore = Callable[..., Awaitable[SessionStore]]


def store_up(metrics: Metrics) -> float | None:
    return metrics.registry.get_sample_value("duplex_proxy_store_up")


@pytest.fixture(
    params=[
        "memory",
        pytest.param("redis", marks=pytest.mark.redis),
        pytest.param("cluster", marks=pytest.mark.redis),
    ]
)
async def make_store(request: pytest.FixtureRequest) -> AsyncIterator[MakeStore]:
    """Factory: ``await make_store(replay_max_bytes=10)`` builds a store with overrides.

    ``cluster`` is a real Redis Cluster (``tests/redis_cluster.py``): the same contract
    holds when a session's keys live on one of three masters.
    """
    url = "memory://"
    if request.param == "redis":
        url = request.getfixturevalue("redis_server_session").url
    elif request.param == "cluster":
        url = request.getfixturevalue("redis_cluster").url
    stores: list[SessionStore] = []

    async def make(**overrides: Any) -> SessionStore:
        store = await open_store(StoreConfig(url=url, **overrides), Metrics())
        stores.append(store)
        return store

    yield make
    for store in stores:
        await store.close()


@pytest.fixture
async def store(make_store: MakeStore) -> SessionStore:
    return await make_store()


@pytest.fixture
async def raw_redis(redis_server_session: RedisServer) -> AsyncIterator[aioredis.Redis]:
    client = aioredis.Redis.from_url(redis_server_session.url)
    yield client
    await client.aclose()
