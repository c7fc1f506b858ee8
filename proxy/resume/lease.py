"""Fenced lease moves on a stored session: take it over, rotate its resume token.

Exactly one of several racing resumes wins: the lease epoch is bumped twice around
the token rotation (``rotate``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from proxy.resume.request import conflict, unavailable
from proxy.store.base import LeaseLost, SessionRecord, SessionStore, StoreUnavailable


async def load_record(store: SessionStore, session_id: str) -> SessionRecord | None:
    try:
        return await store.load(session_id)
    except StoreUnavailable:
        raise unavailable() from None


async def acquire(
    store: SessionStore,
    session_id: str,
    owner: str,
    epoch: int,
    token: str,
    rotated: Callable[[int], Awaitable[SessionRecord]],
) -> int:
    """Move the lease to this connection and rotate the token to ``token``; the new
    epoch."""
    try:
        first = await store.take_over(session_id, owner, epoch)
    except LeaseLost:
        raise conflict() from None
    except StoreUnavailable:
        raise unavailable() from None
    return await rotate(store, session_id, owner, first, token, rotated)


async def rotate(
    store: SessionStore,
    session_id: str,
    owner: str,
    first: int,
    token: str,
    rotated: Callable[[int], Awaitable[SessionRecord]],
) -> int:
    """Save the new token's hash at epoch ``first``, then bump the epoch again.

    The double bump makes exactly one of several racing resumes win: a racer that
    loaded the record between the first bump and the save (so its old token still
    matched) must bump it too, and then one of the two second bumps fails.

    A write that times out may still have landed: once the save was sent, the store
    holds the old token's hash or ``token``'s, and the client, refused as
    ``unavailable``, is given ``token`` to try besides its own. Without it a save that
    landed unanswered would leave the client with a token that is denied for good.
    """
    try:
        record = await rotated(first)
    except LeaseLost:
        raise conflict() from None
    except StoreUnavailable:
        raise unavailable() from None  # nothing written past the first bump
    try:
        await store.save(record)
        return await store.take_over(session_id, owner, first)
    except LeaseLost:
        raise conflict() from None
    except StoreUnavailable:
        raise unavailable(token) from None


async def moved_away(store: SessionStore, session_id: str, epoch: int) -> bool:
    try:
        current = await store.load(session_id)
    except StoreUnavailable:
        return False
    return current is not None and current.epoch != epoch
