"""``session.resume``: reattach a client to its session, here or from the store.

DESIGN §6 / vLLM-Omni duplex dialect: ``session.resume {session_id, resume_token,
last_received_server_event_seq}`` as the first event of a new connection (or the same
fields in the upgrade URL's query). On success the client gets ``session.resumed``
(with a new resume token), then every event after its last seq exactly once, in
order, then live events. The connection it replaces gets ``session.replaced``.
Failures are ``error`` events (``session_resume_expired``, ``session_resume_denied``,
``session_resume_gap``, ``session_resume_conflict``, ``session_resume_unavailable``)
that say nothing about the session; the caller lets the client start fresh.

* emulated session alive on this replica: move the lease, reattach (the upstream
  socket never dropped). While the store is down, the local token still resumes it.
* emulated session in the store (another replica, or this one restarted): move the
  lease, rebuild the replay log from the store's log plus the record's tail, restore
  the shim, and reattach the upstream: a duplex upstream that can resume gets its own
  session back with its own ``session.resume`` (it replays what followed the
  snapshot, so a response goes on); otherwise a fresh upstream session opens with
  the session's settings (a duplex one is also given the conversation so far), and a
  response cut off by the move ends with ``response.done`` status ``incomplete``.
* passthrough session: the upstream resumes its own session and replays its own
  journal; the proxy finds the upstream from the store and relays ``session.resume``.

Exactly one of several racing resumes wins: the lease epoch is bumped twice around
the token rotation (``_rotate``). A runner here that another replica took over
without its noticing yet lets go, and the resume goes on through the store.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, cast

import aiohttp
import orjson

from proxy.clock import now_ms
from proxy.emulated.queue_items import Attach
from proxy.emulated.runner import EmulatedRunner, live_runner
from proxy.logging import get_logger
from proxy.passthrough.binding import keep_binding
from proxy.passthrough.relay import relay
from proxy.persist.checkpoint import checkpoint_of
from proxy.state import ProxyState
from proxy.store.base import (
    LeaseLost,
    SessionRecord,
    SessionStore,
    StoreUnavailable,
    hash_token,
    token_matches,
)
from proxy.store.ids import valid_session_id
from proxy.upstream import (
    UPSTREAM_MAX_MSG,
    UpstreamLink,
    UpstreamRefused,
    UpstreamUnavailable,
    connect,
    dial,
    opening_update,
    resume_over,
    resume_url,
    with_query,
)
from shim.capabilities import Classification, ProxyMode
from shim.dialects.duplex_relay import BargeInRelaySession
from shim.inputs import UpstreamReattached
from shim.wire import error_code

if TYPE_CHECKING:
    from proxy.config import Route
    from proxy.pump import ClientSession
    from shim.journal import Journal

# A client may have received events its session's owner has not persisted yet (it
# flushes every PERSIST_INTERVAL_S). A resume elsewhere waits this long for a live
# owner to catch up before it carries on from what the store has.
OWNER_CATCH_UP_S = 0.3
CATCH_UP_POLL_S = 0.01

Attacher = Callable[[], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class ResumeRequest:
    session_id: str
    resume_token: str
    last_seq: int
    raw: str
    at: float = field(default_factory=time.monotonic)  # when it arrived

    def took_ms(self) -> float:
        return round((time.monotonic() - self.at) * 1000, 1)


class ResumeFailed(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def expired() -> ResumeFailed:
    return ResumeFailed(
        "session_resume_expired", "no resumable session with that id (unknown or expired)"
    )


def denied() -> ResumeFailed:
    return ResumeFailed("session_resume_denied", "the resume token does not match")


def gap() -> ResumeFailed:
    return ResumeFailed(
        "session_resume_gap",
        "events after that server_event_seq are no longer kept; start a new session",
    )


def conflict() -> ResumeFailed:
    return ResumeFailed("session_resume_conflict", "another connection resumed this session")


def unavailable() -> ResumeFailed:
    return ResumeFailed(
        "session_resume_unavailable", "resume is unavailable right now: the session store is down"
    )


def parse_resume(event: dict[str, Any], raw: str) -> ResumeRequest:
    sid, token = event.get("session_id"), event.get("resume_token")
    seq = event.get("last_received_server_event_seq", 0)
    if (
        not isinstance(sid, str)
        or not valid_session_id(sid)
        or not isinstance(token, str)
        or not token
        or isinstance(seq, bool)
        or not isinstance(seq, int)
        or seq < 0
    ):
        raise ResumeFailed(
            "invalid_session_resume",
            "session.resume needs session_id, resume_token and a non-negative "
            "last_received_server_event_seq",
        )
    return ResumeRequest(sid, token, seq, raw)


def resume_from_query(query: Any) -> tuple[dict[str, Any], str] | None:
    if "session_id" not in query or "resume_token" not in query:
        return None
    seq_raw = query.get("last_received_server_event_seq", "0")
    event = {
        "type": "session.resume",
        "session_id": query["session_id"],
        "resume_token": query["resume_token"],
        "last_received_server_event_seq": int(seq_raw) if seq_raw.isdigit() else -1,
    }
    return event, orjson.dumps(event).decode()


async def resume(conn: ClientSession, req: ResumeRequest) -> None:
    """Resume, then run the attachment until it ends; ResumeFailed before anything is sent.

    The caller reports a ResumeFailed to the client, which may then start fresh.
    """
    metrics = conn.state.metrics
    try:
        attach = await _take(conn, req)
    except ResumeFailed as exc:
        metrics.resumes.labels(exc.code).inc()
        raise
    metrics.resumes.labels("resumed").inc()
    await attach()


async def _take(conn: ClientSession, req: ResumeRequest) -> Attacher:
    state = conn.state
    if state.draining:
        # Taking the session here would only hand it over again in a moment.
        raise ResumeFailed("server_shutting_down", "this replica is draining; resume elsewhere")
    runner = live_runner(state, req.session_id)
    if runner is not None:
        async with runner.persister.resume_lock:
            attach = await _take_local(conn, runner, req)
        if attach is not None:
            return attach
    store = state.store
    if store is None:
        raise expired()
    record = await _load(store, req.session_id)
    if record is None:
        raise expired()
    if not token_matches(req.resume_token, record.token_hash):
        raise denied()
    if record.mode == "passthrough":
        return await _take_passthrough(conn, record, req)
    return await _take_from_store(conn, store, record, req)


async def _load(store: SessionStore, session_id: str) -> SessionRecord | None:
    try:
        return await store.load(session_id)
    except StoreUnavailable:
        raise unavailable() from None


async def _acquire(
    store: SessionStore,
    session_id: str,
    owner: str,
    epoch: int,
    rotated: Callable[[int], Awaitable[SessionRecord]],
) -> int:
    """Move the lease to this connection and rotate the token; the new epoch."""
    try:
        first = await store.take_over(session_id, owner, epoch)
    except LeaseLost:
        raise conflict() from None
    except StoreUnavailable:
        raise unavailable() from None
    return await _rotate(store, session_id, owner, first, rotated)


async def _rotate(
    store: SessionStore,
    session_id: str,
    owner: str,
    first: int,
    rotated: Callable[[int], Awaitable[SessionRecord]],
) -> int:
    """Save the new token hash at epoch ``first``, then bump the epoch again.

    The double bump makes exactly one of several racing resumes win: a racer that
    loaded the record between the first bump and the save (so its old token still
    matched) must bump it too, and then one of the two second bumps fails.
    """
    try:
        await store.save(await rotated(first))
        return await store.take_over(session_id, owner, first)
    except LeaseLost:
        raise conflict() from None
    except StoreUnavailable:
        raise unavailable() from None


_tasks: set[asyncio.Task[None]] = set()


def _background(coro: Coroutine[Any, Any, None]) -> None:
    task = asyncio.get_running_loop().create_task(coro)
    _tasks.add(task)
    task.add_done_callback(_finished)


def _finished(task: asyncio.Task[None]) -> None:
    _tasks.discard(task)
    if not task.cancelled() and (exc := task.exception()) is not None:
        get_logger().error("background_task_failed", error=repr(exc), exc_info=exc)


def _resumed_event(runner: EmulatedRunner, token: str) -> dict[str, Any]:
    session = runner.created_event(token)["session"]
    return {
        "type": "session.resumed",
        "session_id": runner.session_id,
        "session": session,
        "resume_token": token,
    }


def _attacher(conn: ClientSession, runner: EmulatedRunner, token: str, last_seq: int) -> Attacher:
    async def attach() -> None:
        first = [_resumed_event(runner, token)]
        await runner.attach(Attach(conn.client, first, asyncio.Event(), last_seq))

    return attach


# ---------------------------------------------------------------------- local


async def _take_local(
    conn: ClientSession, runner: EmulatedRunner, req: ResumeRequest
) -> Attacher | None:
    """Resume a session alive on this replica; None if it was taken over elsewhere.

    The runner knows its token and epoch, so the usual case costs three fenced
    writes and no read.
    """
    p = runner.persister
    if p.replaced or runner.finished.is_set():
        return None
    if not p.enabled:
        raise expired()  # opened while the store was down: never resumable
    store = conn.state.store
    assert store is not None
    sid, owner = req.session_id, conn.state.replica_id
    if not token_matches(req.resume_token, p.token_hash):
        # Perhaps a resume elsewhere rotated the token and this runner is stale.
        if await _moved_away(store, sid, p.epoch):
            _let_go(runner)
            return None
        raise denied()
    if runner.journal.after(req.last_seq, now_ms()) is None:
        raise gap()
    token = secrets.token_urlsafe(32)
    new_hash = hash_token(token)
    degraded: str | None = None
    async with p.lock:
        try:
            first = await store.take_over(sid, owner, p.epoch)
        except StoreUnavailable:
            first, degraded = None, "session store unavailable"
        except LeaseLost:
            current = await _load(store, sid)
            if current is not None:
                _let_go(runner)  # another replica holds it now
                return None
            first, degraded = None, "the session store lost the session"
        if first is not None:

            async def rotated(epoch: int) -> SessionRecord:
                return await p.checkpoint(epoch, new_hash)

            p.adopt(await _rotate(store, sid, owner, first, rotated), token)
    if degraded is not None:
        # No one else can resume it meanwhile (the store cannot hand it out): carry
        # on here; the persister saves the new token once the store answers.
        p.adopt(p.epoch, token)
        conn.log.warning("resume_without_store", reason=degraded)
    conn.log = conn.log.bind(session_id=sid)
    conn.log.info("session_resumed", where="local", last_seq=req.last_seq, took_ms=req.took_ms())
    return _attacher(conn, runner, token, req.last_seq)


async def _moved_away(store: SessionStore, session_id: str, epoch: int) -> bool:
    try:
        current = await store.load(session_id)
    except StoreUnavailable:
        return False
    return current is not None and current.epoch != epoch


def _let_go(runner: EmulatedRunner) -> None:
    """A stale runner: it lets go (its client, if any, gets session.replaced) while
    the resume goes on through the store."""
    runner.persister.let_go()
    _background(runner.replaced_elsewhere())


# ---------------------------------------------------------------------- store


async def _take_from_store(
    conn: ClientSession, store: SessionStore, record: SessionRecord, req: ResumeRequest
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
    # fresh upstream session is opened now; an upstream session to resume only gets
    # its socket, because resuming it takes it from the old owner, which only the
    # holder of the lease may do. (Should the upstream then refuse, the fresh session
    # it falls back to is opened after the lease moved: if that fails too, the session
    # is lost.)
    if BargeInRelaySession.upstream_binding(checkpoint_of(record).shim) is not None:
        dialling: asyncio.Future[_Upstream] = asyncio.ensure_future(
            _connect_upstream(state, route, record)
        )
    else:
        dialling = asyncio.ensure_future(_reopen_upstream(state, route, record))
    try:
        record = await _catch_up(conn, store, record, req)
        reached = await dialling
        if isinstance(reached, _Socket) and last > checkpoint_of(record).seq:
            # The client is ahead of what its owner wrote: no resuming the upstream
            # (see _reattach_upstream); the fresh session opens before the lease moves.
            await reached.ws.close()
            reached = await _reopen_upstream(state, route, record)
    except BaseException:
        await _discard(dialling)
        raise
    try:
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

        epoch = await _acquire(store, sid, state.replica_id, record.epoch, rotated)
        record, logged = final[-1]
        if last < record.acked_seq:
            raise gap()
        # (A log trimmed past ``last`` by its byte or age bound shows only now.)
        events = _replay(last, record, logged)
    except BaseException:
        await reached.ws.close()
        raise
    link, resumed = await _reattach_upstream(conn, route, record, last, reached)
    state.metrics.upstream_reattach.labels("resumed" if resumed else "fresh").inc()
    runner = _rebuild(conn, route, record, link, start_seq=last)
    for event_id in record.recent_event_ids:
        runner.recent.seen(event_id)
    snap = checkpoint_of(record).shim
    shim = runner.shim
    if isinstance(shim, BargeInRelaySession):
        restored = shim.restore(snap, link.created if resumed else None, now_ms())
        if not resumed:
            # A fresh upstream session: it learns the conversation so far.
            restored += shim.handle(UpstreamReattached(link.created, now_ms()))
    else:
        restored = shim.restore(snap)
    _preload(runner.journal, events)
    # Events up to the log head are in the store; the rest are appended at the next flush.
    runner.persister.adopt(epoch, token, flushed_seq=max(last, record.last_seq))
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

    async def attach() -> None:
        first = [_resumed_event(runner, token)]
        await runner.attach(Attach(conn.client, first, asyncio.Event(), last), after=restored)

    return attach


@dataclass
class _Socket:
    """An upstream socket opened to resume an upstream session on; nothing sent yet."""

    ws: aiohttp.ClientWebSocketResponse
    url: str


_Upstream = UpstreamLink | _Socket


async def _discard(dialling: asyncio.Future[_Upstream]) -> None:
    dialling.cancel()
    result = (await asyncio.gather(dialling, return_exceptions=True))[0]
    if isinstance(result, UpstreamLink | _Socket):
        await result.ws.close()


async def _catch_up(
    conn: ClientSession, store: SessionStore, record: SessionRecord, req: ResumeRequest
) -> SessionRecord:
    """Give a live owner a moment to persist the events its client already received."""
    if checkpoint_of(record).seq >= req.last_seq:
        return record
    loop = asyncio.get_running_loop()
    start = loop.time()
    while checkpoint_of(record).seq < req.last_seq and loop.time() < start + OWNER_CATCH_UP_S:
        await asyncio.sleep(CATCH_UP_POLL_S)
        current = await _load(store, req.session_id)
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


def _replay(
    last: int, record: SessionRecord, logged: list[tuple[int, str]] | None
) -> list[tuple[int, str]]:
    """Every event after ``last`` up to the record's snapshot, from log and tail."""
    cp = checkpoint_of(record)
    # A log written without tails may run ahead of its snapshot: then replay to its head.
    head = max(cp.seq, record.last_seq)
    if last >= head:
        # The client is ahead of the store (its owner died before persisting what it
        # had sent): carry on after what the client has.
        return []
    if logged is None:
        raise gap()
    by_seq = dict(logged)
    by_seq.update(cp.tail)
    wanted = range(last + 1, head + 1)
    if any(seq not in by_seq for seq in wanted):
        raise gap()
    return [(seq, by_seq[seq]) for seq in wanted]


def _preload(journal: Journal, events: list[tuple[int, str]]) -> None:
    """Carry the taken-over replay log on: the same events, ids and seqs, in order."""
    now = now_ms()
    for seq, text in events:
        journal.stamp(orjson.loads(text), now)
        if journal.seq != seq:
            raise RuntimeError(f"replay log out of step: {journal.seq} != {seq}")


async def _reopen_upstream(state: ProxyState, route: Route, record: SessionRecord) -> UpstreamLink:
    """A fresh upstream session for a session taken over from the store."""
    assert state.http is not None
    up = record.upstream
    cfg = state.config.server
    upstream_model = str(up.get("upstream_model", record.model))
    session: dict[str, Any] | None = None
    if up.get("kind") == "turn":
        # Known turn-based: skip the ?duplex=1 attempt it would refuse.
        route = replace(route, request_duplex=False)
    else:
        # The duplex relay forwarded the client's session.update upstream: the fresh
        # upstream session opens with it (turn detection stays the proxy's). A
        # snapshot that keeps the update as sent upstream gives all of it; otherwise
        # the instructions are what it has.
        snap = checkpoint_of(record).shim
        sent = snap.get("upstream_update")
        if isinstance(sent, dict):
            nested = sent.get("session")
            session = dict(nested if isinstance(nested, dict) else sent)
            for key in ("type", "event_id"):
                session.pop(key, None)
        elif snap.get("instructions"):
            session = {"instructions": snap["instructions"]}
    try:
        return await dial(
            state.http,
            state.upstream_url(route),
            route,
            opening_update(route, upstream_model, session),
            cfg.upstream_connect_timeout_s,
            cfg.classify_timeout_s,
        )
    except (UpstreamUnavailable, UpstreamRefused):
        state.metrics.upstream_errors.labels("connect").inc()
        raise ResumeFailed(
            "upstream_unavailable", "cannot reopen the upstream session; start a new session"
        ) from None


async def _connect_upstream(state: ProxyState, route: Route, record: SessionRecord) -> _Socket:
    """A socket to resume the record's upstream session on."""
    assert state.http is not None
    upstream_model = str(record.upstream.get("upstream_model", record.model))
    url = resume_url(state.upstream_url(route), upstream_model)
    try:
        ws = await connect(state.http, url, route, state.config.server.upstream_connect_timeout_s)
    except UpstreamUnavailable:
        state.metrics.upstream_errors.labels("connect").inc()
        raise ResumeFailed(
            "upstream_unavailable", "cannot reach the upstream; try again or start a new session"
        ) from None
    return _Socket(ws, url)


async def _reattach_upstream(
    conn: ClientSession, route: Route, record: SessionRecord, last: int, reached: _Upstream
) -> tuple[UpstreamLink, bool]:
    """The upstream for the session taken over, and whether it is its own session.

    The upstream's own session comes back where the snapshot has one to resume and
    the client is not ahead of the snapshot (its old owner died before writing what
    it had sent: the upstream would replay events the client already has). Else, or
    if the upstream cannot resume it, a fresh upstream session opens.
    """
    if isinstance(reached, UpstreamLink):
        return reached, False
    state = conn.state
    cp = checkpoint_of(record)
    binding = BargeInRelaySession.upstream_binding(cp.shim)
    if binding is not None and last <= cp.seq:
        up_sid, up_token, up_seq = binding
        try:
            link = await resume_over(
                reached.ws,
                reached.url,
                up_sid,
                up_token,
                up_seq,
                state.config.server.classify_timeout_s,
            )
        except (UpstreamUnavailable, UpstreamRefused) as exc:
            conn.log.info("upstream_resume_failed", error=str(exc)[:200], effect="fresh session")
        else:
            return link, True
    else:
        await reached.ws.close()
    try:
        return await _reopen_upstream(state, route, record), False
    except ResumeFailed:
        # The lease has moved: the session cannot go on anywhere.
        conn.log.warning("session_lost", reason="upstream unreachable after the takeover")
        raise


def _rebuild(
    conn: ClientSession, route: Route, record: SessionRecord, link: UpstreamLink, start_seq: int
) -> EmulatedRunner:
    up = record.upstream
    caps = up.get("capabilities") or None
    cls = Classification(
        kind="turn" if up.get("kind") == "turn" else "duplex",
        mode=cast(ProxyMode, record.mode),
        upstream_capabilities=caps,
        reasons=tuple(up.get("reasons", ())),
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


# ---------------------------------------------------------------------- passthrough

# The upstream's refusals, as the codes this proxy documents.
_UPSTREAM_CODES = {
    "invalid_resume_token": "session_resume_denied",
    "session_resume_expired": "session_resume_expired",
}


async def _take_passthrough(
    conn: ClientSession, record: SessionRecord, req: ResumeRequest
) -> Attacher:
    """The upstream keeps its own session and journal: relay the resume to it."""
    state = conn.state
    assert state.http is not None and state.store is not None
    store = state.store
    route = state.config.route_for(str(record.upstream.get("route", record.model)))
    if route is None:
        raise expired()
    cfg = state.config.server
    url = with_query(state.upstream_url(route), {"duplex": "1", "autostart": "0"})
    try:
        async with asyncio.timeout(cfg.upstream_connect_timeout_s):
            ws = await state.http.ws_connect(
                url, headers=dict(route.headers), max_msg_size=UPSTREAM_MAX_MSG
            )
    except (TimeoutError, aiohttp.ClientError, OSError):
        state.metrics.upstream_errors.labels("connect").inc()
        raise ResumeFailed("upstream_unavailable", "cannot reach the upstream") from None
    try:
        await ws.send_str(req.raw)
        msg = await ws.receive(timeout=cfg.classify_timeout_s)
        first = orjson.loads(msg.data) if msg.type == aiohttp.WSMsgType.TEXT else None
        if not isinstance(first, dict):
            raise ResumeFailed("upstream_unavailable", "the upstream did not answer the resume")
        if first.get("type") != "session.resumed":
            raise _upstream_refusal(first)
    except BaseException as exc:
        await ws.close()
        if isinstance(exc, TimeoutError | aiohttp.ClientError | orjson.JSONDecodeError):
            raise ResumeFailed(
                "upstream_unavailable", "the upstream did not answer the resume"
            ) from None
        raise
    token = first.get("resume_token")
    if isinstance(token, str):
        await _rebind(conn, store, record, token)
    conn.log = conn.log.bind(session_id=req.session_id, mode="passthrough")
    conn.log.info("session_resumed", where="upstream", last_seq=req.last_seq, took_ms=req.took_ms())

    async def attach() -> None:
        conn.client.send_text(msg.data)
        grace = state.config.store.disconnect_grace_s
        keeper = asyncio.create_task(keep_binding(store, record, grace, conn.log))
        try:
            await relay(conn, ws)
        finally:
            keeper.cancel()
            await asyncio.gather(keeper, return_exceptions=True)

    return attach


def _upstream_refusal(event: dict[str, Any]) -> ResumeFailed:
    if event.get("type") == "session.resync_required":
        return gap()
    code = error_code(event)
    mapped = _UPSTREAM_CODES.get(str(code), "session_resume_failed")
    if mapped == "session_resume_expired":
        return expired()
    if mapped == "session_resume_denied":
        return denied()
    return ResumeFailed(mapped, f"the upstream refused the resume ({code})")


async def _rebind(
    conn: ClientSession, store: SessionStore, record: SessionRecord, token: str
) -> None:
    """The upstream rotated its resume token: remember the new one (hashed), fenced."""
    try:
        record.epoch = await store.take_over(record.session_id, conn.state.replica_id, record.epoch)
        record.token_hash = hash_token(token)
        record.owner = conn.state.replica_id
        await store.save(record)
    except (LeaseLost, StoreUnavailable) as exc:
        conn.log.warning("passthrough_rebind_failed", error=type(exc).__name__)
