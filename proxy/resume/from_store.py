"""Take an emulated session over from the store (another replica, or this one
restarted).

Move the lease, rebuild the replay log from the store's log plus the record's
tail, restore the shim, and reattach the upstream (``upstream_reopen``): a fresh
duplex upstream session is also given the conversation so far, and a response cut
off by the move ends with ``response.done`` status ``incomplete``.
"""

from __future__ import annotations

import asyncio
import secrets
from typing import cast

from proxy.clock import now_ms, wall_offset_ms
from proxy.config import Route
from proxy.connection import ClientConnection
from proxy.emulated.queue_items import Attach
from proxy.emulated.runner import EmulatedRunner
from proxy.persist.checkpoint import checkpoint_of
from proxy.persist.sealing import opened, stored_binding
from proxy.resume.client_attach import Attacher, resumed_event
from proxy.resume.lease import acquire, load_record
from proxy.resume.replay import preload, replay_events
from proxy.resume.request import ResumeRequest, conflict, expired, gap, shutting_down
from proxy.resume.upstream_reopen import (
    Reached,
    UpstreamSocket,
    connect_upstream,
    discard,
    fresh_before_move,
    let_go,
    reattach_upstream,
    resumes_own,
)
from proxy.store.base import LeaseLost, SessionRecord, SessionStore, hash_token
from proxy.store.secret_box import secret_box
from proxy.upstream import UpstreamLink
from shim import played_snapshot, snapshot_clock
from shim.capabilities import Classification, ProxyMode, client_of
from shim.dialects.duplex_relay import BargeInRelaySession
from shim.inputs import UpstreamReattached

# A client may have received events its session's owner has not persisted yet (it
# checkpoints at most every [store] checkpoint_interval_s, and at once when its client
# leaves). A resume elsewhere waits this long past that interval for a live owner to
# catch up before it carries on from what the store has.
OWNER_CATCH_UP_S = 0.3


CATCH_UP_POLL_S = 0.01


async def take_from_store(
    conn: ClientConnection, store: SessionStore, record: SessionRecord, req: ResumeRequest
) -> Attacher:
    state = conn.state
    sid, last = req.session_id, req.last_seq
    route = state.config.route_for(str(record.upstream.get("route", record.model)))
    if route is None:
        raise expired()
    if last < record.acked_seq:
        raise gap()
    # The upstream is reached while the owner catches up, and before the lease moves:
    # an unreachable upstream fails the resume but leaves the session where it is. A
    # fresh upstream session is tried now; an upstream session to resume only gets
    # its socket, because resuming it takes it from the old owner, which only the
    # holder of the lease may do. (Should the upstream then refuse, or be full of the
    # old owner's upstream session, the fresh session is opened after the lease moved:
    # if that fails too, the session is lost. See proxy/resume/upstream_reopen.py.)
    if stored_binding(record, secret_box(state.config.store)) is not None:
        dialling: asyncio.Future[Reached] = asyncio.ensure_future(
            connect_upstream(state, route, record)
        )
    else:
        dialling = asyncio.ensure_future(fresh_before_move(state, route, record))
    try:
        record = await _catch_up(conn, store, record, req)
        reached = await dialling
        if isinstance(reached, UpstreamSocket) and not resumes_own(record, last):
            # The upstream's own session may not come back (the client is ahead of
            # what its owner wrote, or a turn held over the answer is in the
            # snapshot): the fresh session opens before the lease moves.
            await reached.ws.close()
            reached = await fresh_before_move(state, route, record)
    except BaseException:
        await discard(dialling)
        raise
    try:
        if state.draining:
            raise shutting_down()  # before the token rotates: the client keeps its own
        conn.committing()
        token = secrets.token_urlsafe(32)
        final: list[tuple[SessionRecord, list[tuple[int, str]] | None]] = []

        async def rotated(epoch: int) -> SessionRecord:
            # The first bump fenced the old owner out: this is its last word.
            current, logged = await asyncio.gather(store.load(sid), store.events_after(sid, last))
            if current is None or current.epoch != epoch:
                raise LeaseLost(f"session {sid} moved on")
            current.token_hash = hash_token(token)
            final.append((current, logged))
            return current

        epoch = await acquire(store, sid, state.replica_id, record.epoch, token, rotated)
        record, logged = final[-1]
        if last < record.acked_seq:
            raise gap()
        # (A log trimmed past ``last`` by its byte or age bound shows only now.)
        events = replay_events(last, record, logged)
    except BaseException:
        await let_go(reached)
        raise
    link, resumed = await reattach_upstream(conn, route, record, last, reached)
    state.metrics.upstream_reattach.labels("resumed" if resumed else "fresh").inc()
    runner = _rebuild(conn, route, record, link, start_seq=last)
    runner.persister.key_id = record.key_id
    for event_id in record.recent_event_ids:
        runner.recent.seen(event_id)
    snap = opened(checkpoint_of(record).shim, secret_box(state.config.store), sid)
    snap = snapshot_clock.from_wall(snap, wall_offset_ms(), now_ms())  # on this clock
    shim = runner.shim
    if resumed or not isinstance(shim, BargeInRelaySession):
        # The items the client was sent, before the restore carries a response on. Not
        # for a fresh duplex upstream session: it never had their responses, and the
        # relay would pass a truncate of one on to it (shim/dialects/duplex_relay.py).
        played_snapshot.restore(shim.ledger, snap)
    if isinstance(shim, BargeInRelaySession):
        restored = shim.restore(snap, link.created if resumed else None, now_ms())
        if not resumed:
            # A fresh upstream session: it learns the conversation so far.
            restored += shim.handle(UpstreamReattached(link.created, now_ms()))
    else:
        restored = shim.restore(snap)
    preload(runner.journal, events)
    # Events up to the log head are in the store; the rest are appended at the next flush.
    flushed = max(last, record.last_seq)
    runner.persister.adopt(epoch, token, flushed_seq=flushed, saved=runner.journal.seq)
    conn.log = runner.log
    conn.log.info(
        "session_resumed",
        where="store",
        last_seq=last,
        replayed=len(events),
        upstream="resumed" if resumed else "fresh",
        took_ms=req.took_ms(),
    )
    runner.start()
    if state.draining:
        await runner.drain()  # taken as the replica drains: handed on (client_session.py)

    async def attach() -> None:
        first = [resumed_event(runner, token)]
        conn.told(handed=True)
        await runner.attach(Attach(conn.client, first, asyncio.Event(), last), after=restored)

    return attach


async def _catch_up(
    conn: ClientConnection, store: SessionStore, record: SessionRecord, req: ResumeRequest
) -> SessionRecord:
    """Give a live owner a moment to persist the events its client already received."""
    if checkpoint_of(record).seq >= req.last_seq:
        return record
    loop = asyncio.get_running_loop()
    start = loop.time()
    until = start + conn.state.config.store.checkpoint_interval_s + OWNER_CATCH_UP_S
    while checkpoint_of(record).seq < req.last_seq and loop.time() < until:
        await asyncio.sleep(CATCH_UP_POLL_S)
        current = await load_record(store, req.session_id)
        if current is None:
            raise expired()
        if current.epoch != record.epoch:
            raise conflict()  # resumed by someone else meanwhile
        record = current
    caught_up = checkpoint_of(record).seq >= req.last_seq
    (conn.log.info if caught_up else conn.log.warning)(
        "resume_waited_for_owner",
        waited_ms=round((loop.time() - start) * 1000),
        caught_up=caught_up,
        client_seq=req.last_seq,
        stored_seq=checkpoint_of(record).seq,
    )
    return record


def _rebuild(
    conn: ClientConnection, route: Route, record: SessionRecord, link: UpstreamLink, start_seq: int
) -> EmulatedRunner:
    up = record.upstream
    caps = up.get("capabilities") or None
    cls = Classification(
        kind="turn" if up.get("kind") == "turn" else "duplex",
        mode=cast(ProxyMode, record.mode),
        upstream_capabilities=caps,
        reasons=tuple(up.get("reasons", ())),
        client=client_of(tuple(up.get("reasons", ()))),
    )
    log = conn.log.bind(session_id=record.session_id, mode=record.mode)
    return EmulatedRunner(
        conn.state,
        record.session_id,
        route,
        cls,
        record.model,
        str(up.get("upstream_model", record.model)),
        link.ws,
        link.url,
        up.get("created") or link.created,
        log,
        start_seq=start_seq,
    )
