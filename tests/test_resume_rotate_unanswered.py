"""A resume whose token rotation the store did not answer (``proxy/resume/lease.py``).

The store may have applied a write whose answer never came (a Redis answering past
``store.timeout_s``). Once the new token's hash was sent, the store holds either it
or the client's previous one: the client, refused as ``session_resume_unavailable``,
is given the new token too, and exactly one of the two resumes the session. Before,
it kept only its previous token, which a landed write had made useless for good.

Each store here is a real one (memory, and Redis), with one write made to go
unanswered: applied then timed out, or timed out without being applied.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from proxy.config import StoreConfig
from proxy.resume.lease import acquire
from proxy.resume.request import ResumeFailed, denied, expired, unavailable
from proxy.store.base import (
    SessionRecord,
    SessionStore,
    StoreUnavailable,
    hash_token,
    token_matches,
)
from tests.redis_server import RedisServer
from tests.stores import new_record, opened_store

OLD = "old-token-" + "x" * 20


@pytest.fixture(params=["memory", "redis"])
async def store(request: pytest.FixtureRequest) -> AsyncIterator[SessionStore]:
    if request.param == "memory":
        config = StoreConfig()
    else:
        server: RedisServer = request.getfixturevalue("redis_server_session")
        config = StoreConfig(url=server.url)
    async with opened_store(config) as opened:
        yield opened


def unanswered(store: SessionStore, name: str, *, applied: bool, after: int = 0) -> None:
    """The ``name`` call after ``after`` answered ones times out, having taken effect
    if ``applied``; the calls after it are answered."""
    real, calls = getattr(store, name), [0]

    async def write(*args: Any) -> Any:
        calls[0] += 1
        if calls[0] != after + 1:
            return await real(*args)
        if applied:
            await real(*args)
        raise StoreUnavailable(f"{name}: no answer in time")

    setattr(store, name, write)


async def resume_once(store: SessionStore, sid: str, epoch: int, token: str) -> int:
    """``acquire`` as a resume from the store does it: rotate to ``token``."""

    async def rotated(first: int) -> SessionRecord:
        current = await store.load(sid)
        assert current is not None and current.epoch == first
        current.token_hash = hash_token(token)
        return current

    return await acquire(store, sid, "replica-b", epoch, token, rotated)


async def stored_token_is(store: SessionStore, sid: str) -> Callable[[str], bool]:
    record = await store.load(sid)
    assert record is not None
    return lambda token: token_matches(token, record.token_hash)


@pytest.mark.redis
@pytest.mark.parametrize(
    ("write", "applied", "holds_new"),
    [
        ("save", True, True),  # the new hash landed, its answer was lost
        ("save", False, False),  # the save never landed
        ("take_over", True, True),  # the second bump landed unanswered
        ("take_over", False, True),  # the save landed, the second bump did not
    ],
)
async def test_the_refused_client_holds_the_token_the_store_holds(
    store: SessionStore, write: str, applied: bool, holds_new: bool
) -> None:
    record = new_record(token_hash=hash_token(OLD))
    await store.create(record)
    sid = record.session_id
    new = "new-" + secrets.token_urlsafe(16)
    if write == "take_over":  # the first bump is answered, the second is not
        unanswered(store, "take_over", applied=applied, after=1)
    else:
        unanswered(store, write, applied=applied)

    with pytest.raises(ResumeFailed) as refused:
        await resume_once(store, sid, record.epoch, new)
    assert refused.value.code == "session_resume_unavailable"
    assert refused.value.resume_token == new, "the client is told the token tried"
    assert refused.value.close() == (1013, "resume unavailable: try again")

    matches = await stored_token_is(store, sid)
    assert matches(new) is holds_new and matches(OLD) is not holds_new, "exactly one resumes"
    # The client tries again with the token that works: the session is not lost.
    current = await store.load(sid)
    assert current is not None
    again = "again-" + secrets.token_urlsafe(16)
    epoch = await resume_once(store, sid, current.epoch, again)
    assert (await store.load(sid)).epoch == epoch  # type: ignore[union-attr]
    assert (await stored_token_is(store, sid))(again)


async def test_a_store_down_before_anything_is_written_gives_no_token() -> None:
    """The first bump fails: nothing changed, the client's own token still resumes."""
    async with opened_store(StoreConfig()) as store:
        record = new_record(token_hash=hash_token(OLD))
        await store.create(record)
        unanswered(store, "take_over", applied=False)
        with pytest.raises(ResumeFailed) as refused:
            await resume_once(store, record.session_id, record.epoch, "new-token")
        assert refused.value.code == "session_resume_unavailable"
        assert refused.value.resume_token is None
        assert (await stored_token_is(store, record.session_id))(OLD)


def test_only_an_unavailable_store_closes_with_try_again_later() -> None:
    assert unavailable().close()[0] == 1013
    assert {denied().close()[0], expired().close()[0]} == {1008}
