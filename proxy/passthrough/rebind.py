"""A passthrough resume's new binding: the hash of the upstream's rotated token.

The upstream rotates its resume token on every resume: from then on only the new
token resumes the session there, and a resume through the proxy is let through only
if its token matches the stored hash. Until that hash is written, the client's new
token is one the store does not know, and its old one one the upstream refuses.

So the write (``SessionStore.rebind``: the lease and the hash in one, idempotent) is
retried with backoff: up to ``[store] rebind_wait_s`` before the client is answered,
and past that in the background until it lands, another resume is found to have
rotated the token since (LeaseLost), or it is given up. It is not given up while the
relay that resumed the session runs (``Rebinding.held``): that relay keeps the
binding alive (``proxy/passthrough/binding.py``, at the epoch before the rebind), so
a store that refuses only this write for a while must still get it once it heals.
It is given up ``disconnect_grace_s`` after that relay ended (or after the resume,
if no relay ran): the binding, unwritten that long, has expired by then. Meanwhile
the resume's mark is held on (``proxy/passthrough/rebind_mark.py``), so a resume with
the token not bound yet is told to try again, not denied. A write that landed but
was answered late (a timeout) finds its own hash when retried, and is done. Only the
relay's own record follows the epoch it moved to (``follows_rebind``): a connection
that the resume replaced holds the old hash and stops writing.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator

from proxy.logging import Logger
from proxy.passthrough.rebind_mark import FIRST_RETRY_S, MAX_RETRY_S, Mark, hold, pending_writes
from proxy.store.base import LeaseLost, SessionRecord, SessionStore, StoreUnavailable, hash_token


class Rebinding:
    """A rebind's write in the background: tried while the relay it belongs to runs
    (``held``), and up to ``grace_s`` after it ended, or after the resume."""

    __slots__ = ("grace_s", "relaying", "until")

    def __init__(self, grace_s: float) -> None:
        self.grace_s = grace_s
        self.relaying = False
        self.until = asyncio.get_running_loop().time() + grace_s  # loop time

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """While the relay runs: the write goes on, and ``grace_s`` after it ends."""
        self.relaying = True
        try:
            yield
        finally:
            self.relaying = False
            self.until = max(self.until, asyncio.get_running_loop().time() + self.grace_s)

    def lapsed(self, delay: float) -> bool:
        """Whether a try ``delay`` from now would come too late."""
        return not self.relaying and asyncio.get_running_loop().time() + delay >= self.until


async def rebind(
    store: SessionStore,
    record: SessionRecord,
    owner: str,
    token: str,
    mark: Mark,
    wait_s: float,
    grace_s: float,
    log: Logger,
    counted: Callable[[str], None],
) -> Rebinding:
    """Bind ``record`` to the upstream's new ``token``, waiting up to ``wait_s`` for it;
    the write, to hold while the resumed session's relay runs. ``counted`` is told how
    it ended (landed, landed_late, failed, superseded).

    ``record`` takes the new hash at once and the new epoch once the write lands.
    """
    old_hash, record.token_hash = record.token_hash, hash_token(token)
    loop = asyncio.get_running_loop()
    started = loop.time()
    pending = Rebinding(grace_s)
    task = loop.create_task(_retried(store, record, owner, old_hash, mark, pending, log, counted))
    pending_writes.add(task)
    task.add_done_callback(pending_writes.discard)
    # Not cancelled with the resume (nor past ``wait_s``): the client may hold the token.
    done, _ = await asyncio.wait({task}, timeout=wait_s)
    if not done and wait_s > 0:
        log.warning("passthrough_rebind_pending", waited_ms=round((loop.time() - started) * 1000))
    return pending


async def _retried(
    store: SessionStore,
    record: SessionRecord,
    owner: str,
    old_hash: str,
    mark: Mark,
    pending: Rebinding,
    log: Logger,
    counted: Callable[[str], None],
) -> None:
    delay, tries = FIRST_RETRY_S, 0
    while True:
        tries += 1
        try:
            epoch = await store.rebind(record.session_id, owner, old_hash, record.token_hash)
        except StoreUnavailable as exc:
            if pending.lapsed(delay):
                # The session cannot be resumed through the proxy any more.
                log.error("passthrough_rebind_failed", tries=tries, error=str(exc))
                counted("failed")
                return
            await hold(store, record, mark, delay)
            await asyncio.sleep(delay)
            delay = min(2 * delay, MAX_RETRY_S)
            continue
        except LeaseLost as exc:
            log.warning("passthrough_rebind_failed", tries=tries, error=str(exc))
            counted("superseded")
            return
        record.epoch, record.owner, record.rebind_until_ms = epoch, owner, 0
        if tries > 1:
            log.info("passthrough_rebind_landed", tries=tries)
        counted("landed" if tries == 1 else "landed_late")
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
