"""A passthrough resume's new binding: the hash of the upstream's rotated token.

The upstream rotates its resume token on every resume: from then on only the new
token resumes the session there, and a resume through the proxy is let through only
if its token matches the stored hash. Until that hash is written, the client's new
token is one the store does not know, and its old one one the upstream refuses.

So the write (``SessionStore.rebind``: the lease and the hash in one, idempotent) is
retried with backoff: up to ``[store] rebind_wait_s`` before the client is answered,
and past that in the background until it lands or ``disconnect_grace_s`` has passed
(the binding, unwritten that long, has expired by then). A write that landed but was
answered late (a timeout) finds its own hash when retried, and is done. Only the
relay's own record follows the epoch it moved to (``follows_rebind``): a connection
that the resume replaced holds the old hash and stops writing.

Before the resume is relayed at all, the binding is marked (``mark_rebinding``): up
to ``rebind_until_ms`` its hash may be about to move to a token the store does not
know yet, so a resume meanwhile whose token does not match is told to try again
(``session_resume_unavailable``), not denied; the rebind clears the mark. A store
that does not take the mark refuses the resume before the upstream rotates anything.
A resume that ends with no token rotated (the upstream refused it, or did not
answer it) takes its own mark away (``unmark``); each resume's mark is its own
(``SessionStore.rebind_mark``), so that of another resume relayed meanwhile, on
any replica, stands until that one ends too.
"""

from __future__ import annotations

import asyncio
import secrets
import time

from proxy.logging import Logger
from proxy.store.base import LeaseLost, SessionRecord, SessionStore, StoreUnavailable, hash_token

# Backoff between tries: from the first, doubling, up to the last.
FIRST_RETRY_S = 0.05
MAX_RETRY_S = 1.0

_pending: set[asyncio.Task[None]] = set()


async def rebind(
    store: SessionStore,
    record: SessionRecord,
    owner: str,
    token: str,
    wait_s: float,
    grace_s: float,
    log: Logger,
) -> None:
    """Bind ``record`` to the upstream's new ``token``, waiting up to ``wait_s`` for it.

    ``record`` takes the new hash at once and the new epoch once the write lands.
    """
    old_hash, record.token_hash = record.token_hash, hash_token(token)
    loop = asyncio.get_running_loop()
    started = loop.time()
    task = loop.create_task(_retried(store, record, owner, old_hash, started + grace_s, log))
    _pending.add(task)
    task.add_done_callback(_pending.discard)
    # Not cancelled with the resume (nor past ``wait_s``): the client may hold the token.
    done, _ = await asyncio.wait({task}, timeout=wait_s)
    if not done and wait_s > 0:
        log.warning("passthrough_rebind_pending", waited_ms=round((loop.time() - started) * 1000))


async def _retried(
    store: SessionStore,
    record: SessionRecord,
    owner: str,
    old_hash: str,
    deadline: float,
    log: Logger,
) -> None:
    loop = asyncio.get_running_loop()
    delay, tries = FIRST_RETRY_S, 0
    while True:
        tries += 1
        try:
            epoch = await store.rebind(record.session_id, owner, old_hash, record.token_hash)
        except StoreUnavailable as exc:
            if loop.time() + delay >= deadline:
                # The session cannot be resumed through the proxy any more.
                log.error("passthrough_rebind_failed", tries=tries, error=str(exc))
                return
            await asyncio.sleep(delay)
            delay = min(2 * delay, MAX_RETRY_S)
            continue
        except LeaseLost as exc:
            log.warning("passthrough_rebind_failed", tries=tries, error=str(exc))
            return
        record.epoch, record.owner, record.rebind_until_ms = epoch, owner, 0
        if tries > 1:
            log.info("passthrough_rebind_landed", tries=tries)
        return


async def follows_rebind(store: SessionStore, record: SessionRecord) -> bool:
    """After a write at ``record.epoch`` was refused (LeaseLost): whether the stored
    binding is still this relay's own, its rebind landed unanswered or in the
    background (the stored hash is the one only this relay's upstream gave out). If
    so, ``record`` takes its epoch."""
    current = await store.load(record.session_id)
    if current is None or current.token_hash != record.token_hash:
        return False
    record.epoch = current.epoch
    return True


async def mark_rebinding(store: SessionStore, record: SessionRecord, hold_s: float) -> str:
    """Mark ``record``'s binding as possibly moving for ``hold_s``, fenced by its epoch
    (StoreUnavailable, LeaseLost: nothing was relayed, the client's token still
    resumes); the mark's id, for ``unmark``."""
    mark, now = secrets.token_hex(8), time.time()
    until = round((now + hold_s) * 1000)
    now_ms = round(now * 1000)
    sid = record.session_id
    record.rebind_until_ms = await store.rebind_mark(sid, record.epoch, mark, until, now_ms)
    return mark


async def unmark(
    store: SessionStore, record: SessionRecord, mark: str, retry_s: float, log: Logger
) -> None:
    """Take ``mark`` away: the resume that wrote it rotated no token. Fenced by the
    epoch (a rebind since has cleared it). Returns once the store answered the first
    try; one it refused is tried again in the background, up to ``retry_s`` (the
    mark's own hold: past it the mark is gone anyway), the resume cancelled or not."""
    loop = asyncio.get_running_loop()
    tried = asyncio.Event()
    deadline = loop.time() + retry_s
    task = loop.create_task(_unmarked(store, record, mark, deadline, tried, log))
    _pending.add(task)
    task.add_done_callback(_pending.discard)
    await tried.wait()


async def _unmarked(
    store: SessionStore,
    record: SessionRecord,
    mark: str,
    deadline: float,
    tried: asyncio.Event,
    log: Logger,
) -> None:
    loop = asyncio.get_running_loop()
    delay, tries = FIRST_RETRY_S, 0
    try:
        while True:
            tries += 1
            now_ms = round(time.time() * 1000)
            try:
                left = await store.rebind_mark(record.session_id, record.epoch, mark, 0, now_ms)
            except StoreUnavailable as exc:
                tried.set()
                if loop.time() + delay >= deadline:  # it holds to its end: resumes retry
                    log.warning("passthrough_unmark_failed", tries=tries, error=str(exc))
                    return
                await asyncio.sleep(delay)
                delay = min(2 * delay, MAX_RETRY_S)
                continue
            except LeaseLost:  # another resume's rebind cleared every mark, or it expired
                return
            record.rebind_until_ms = left
            return
    finally:
        tried.set()


def rebinding(record: SessionRecord) -> bool:
    """Whether a resume of ``record`` relayed to its upstream may not have bound the
    token the upstream rotated to yet."""
    return record.rebind_until_ms > time.time() * 1000
