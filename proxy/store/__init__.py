"""Session stores (DESIGN.md §6): pick one from ``store.url`` and share the helpers.

Backends are imported lazily so a memory-only deployment never imports redis.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from proxy.store.base import LeaseLost, SessionRecord, SessionStore, StoreUnavailable

if TYPE_CHECKING:
    from proxy.config import StoreConfig
    from proxy.metrics import Metrics

__all__ = [
    "LeaseLost",
    "SessionRecord",
    "SessionStore",
    "StoreUnavailable",
    "check_session_id",
    "open_store",
    "valid_session_id",
]

# Session ids reach the store from clients (``session.resume``), so they are bounded
# and must not carry a brace: a Redis Cluster hash tag is the text between the first
# ``{`` and the next ``}``, and a ``}`` at the start of an id would make the tag empty
# and scatter one session's keys over several slots.
MAX_SESSION_ID_LEN = 128


def valid_session_id(session_id: str) -> bool:
    return (
        0 < len(session_id) <= MAX_SESSION_ID_LEN
        and session_id.isascii()
        and session_id.isprintable()
        and not any(c in session_id for c in "{} ")
    )


def check_session_id(session_id: str) -> None:
    """Writes with a malformed id are a programming error (ids are generated here)."""
    if not valid_session_id(session_id):
        raise ValueError(f"invalid session id {session_id[:40]!r}")


async def open_store(config: StoreConfig, metrics: Metrics | None = None) -> SessionStore:
    """Open the store ``config.url`` names; never fails because Redis is down.

    The proxy must start and serve live sessions during a Redis outage (DESIGN §6):
    a Redis store connects lazily and recovers on its own once Redis answers.
    """
    url = config.url
    if url.startswith("memory://"):
        from proxy.store.memory import MemoryStore

        store: SessionStore = MemoryStore(config, metrics)
    elif url.startswith(("redis://", "rediss://", "unix://")):
        from proxy.store.redis import RedisStore

        store = RedisStore(config, metrics)
    else:
        raise ValueError("store.url must be memory://, redis://, rediss:// or unix://")
    # Sets the store_up gauge right away; a down Redis only makes this return False.
    await store.healthy()
    return store
