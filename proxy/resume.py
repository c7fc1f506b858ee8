"""``session.resume``: reattach a client to its session, here or from the store.

DESIGN §6 / vLLM-Omni duplex dialect: ``session.resume {session_id, resume_token,
last_received_server_event_seq}`` as the first event of a new connection (or the same
fields in the upgrade URL's query). On success the client gets ``session.resumed``
(with a new resume token), then every event after its last seq exactly once, in
order, then live events. The connection it replaces gets ``session.replaced``.

* emulated session alive on this replica: take the lease, reattach.
* emulated session in the store (another replica, or this one restarted): take the
  lease (exactly one racing resume wins), replay from the store's log, restore the
  shim and open a fresh upstream session; a response cut off by the move ends with
  ``response.done`` status ``incomplete``.
* passthrough session: the upstream resumes its own session; the proxy finds which
  upstream from the store (or the route) and relays ``session.resume`` to it.
"""

from __future__ import annotations

import asyncio
import secrets
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from proxy.emulated import Attach, EmulatedRunner
from proxy.store import valid_session_id
from proxy.store.base import LeaseLost, SessionRecord, StoreUnavailable, token_matches
from proxy.upstream import UpstreamRefused, UpstreamUnavailable, dial, opening_update, with_query
from shim.capabilities import Classification

if TYPE_CHECKING:
    from proxy.pump import ClientSession


@dataclass(frozen=True, slots=True)
class ResumeRequest:
    session_id: str
    resume_token: str
    last_seq: int
    raw: str


class ResumeFailed(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


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


EXPIRED = ResumeFailed(
    "session_resume_expired", "no resumable session with that id (unknown or expired)"
)
DENIED = ResumeFailed("session_resume_denied", "the resume token does not match")


async def resume(conn: ClientSession, req: ResumeRequest) -> None:
    """Resume or raise ResumeFailed (the caller reports it; the client may start fresh)."""
    state = conn.state
    metrics = state.metrics
    runner = state.live.get(req.session_id)
    try:
        if runner is not None:
            await _resume_local(conn, runner, req)
            return
        if state.store is None:
            raise EXPIRED
        try:
            record = await state.store.load(req.session_id)
        except StoreUnavailable:
            raise ResumeFailed(
                "session_resume_unavailable",
                "resume is unavailable right now: the session store is down",
            ) from None
        if record is None:
            raise EXPIRED
        if not token_matches(req.resume_token, record.token_hash):
            raise DENIED
        if record.mode == "passthrough":
            await _resume_passthrough(conn, record, req)
        else:
            await _resume_from_store(conn, record, req)
    except ResumeFailed as exc:
        metrics.resumes.labels(exc.code).inc()
        raise
    metrics.resumes.labels("resumed").inc()


def _resumed_event(runner: EmulatedRunner, token: str) -> dict[str, Any]:
    session = runner.created_event(token)["session"]
    return {
        "type": "session.resumed",
        "session_id": runner.session_id,
        "session": session,
        "resume_token": token,
    }


async def _take_lease(conn: ClientSession, session_id: str, epoch: int) -> int:
    assert conn.state.store is not None
    try:
        return await conn.state.store.take_over(session_id, conn.state.replica_id, epoch)
    except LeaseLost:
        raise ResumeFailed(
            "session_resume_conflict", "another connection resumed this session first"
        ) from None
    except StoreUnavailable:
        raise ResumeFailed(
            "session_resume_unavailable",
            "resume is unavailable right now: the session store is down",
        ) from None


async def _resume_local(conn: ClientSession, runner: EmulatedRunner, req: ResumeRequest) -> None:
    p = runner.persister
    if not p.enabled or not token_matches(req.resume_token, p.token_hash):
        raise DENIED if p.enabled else EXPIRED
    if runner.journal.after(req.last_seq, asyncio.get_running_loop().time() * 1000) is None:
        raise ResumeFailed(
            "session_resume_gap", "events after that seq are no longer kept; start a new session"
        )
    p.epoch = await _take_lease(conn, req.session_id, p.epoch)
    token = secrets.token_urlsafe(32)
    p.adopt(p.epoch, token)
    await p.flush()
    conn.log = conn.log.bind(session_id=req.session_id)
    conn.log.info("session_resumed", where="local", last_seq=req.last_seq)
    done = asyncio.Event()
    await runner.attach(
        Attach(conn.client, [_resumed_event(runner, token)], done, [], replay_after=req.last_seq)
    )


async def _resume_from_store(
    conn: ClientSession, record: SessionRecord, req: ResumeRequest
) -> None:
    state = conn.state
    assert state.store is not None and state.http is not None
    up = record.upstream
    route = state.config.route_for(str(up.get("route", record.model)))
    if route is None:
        raise EXPIRED
    epoch = await _take_lease(conn, req.session_id, record.epoch)
    try:
        logged = await state.store.events_after(req.session_id, req.last_seq)
    except StoreUnavailable:
        raise ResumeFailed("session_resume_unavailable", "the session store is down") from None
    if logged is None:
        raise ResumeFailed(
            "session_resume_gap", "events after that seq are no longer kept; start a new session"
        )
    cfg = state.config.server
    upstream_model = str(up.get("upstream_model", record.model))
    try:
        link = await dial(
            state.http,
            state.upstream_url(route),
            route,
            opening_update(route, upstream_model, None),
            cfg.upstream_connect_timeout_s,
            cfg.classify_timeout_s,
        )
    except (UpstreamUnavailable, UpstreamRefused) as exc:
        raise ResumeFailed("upstream_unavailable", f"cannot reopen the upstream: {exc}") from None
    caps = up.get("capabilities") or None
    cls = Classification(
        kind="turn" if up.get("kind") == "turn" else "duplex",
        mode=record.mode,  # type: ignore[arg-type]
        upstream_capabilities=caps,
        reasons=tuple(up.get("reasons", ())),
    )
    conn.log = conn.log.bind(session_id=req.session_id, mode=record.mode)
    runner = EmulatedRunner(
        state,
        req.session_id,
        route,
        cls,
        record.model,
        upstream_model,
        link.ws,
        link.url,
        up.get("created") or link.created,
        conn.log,
        start_seq=record.last_seq,
    )
    for event_id in record.recent_event_ids:
        runner.recent.seen(event_id)
    runner.journal.acked = record.acked_seq
    restored = runner.shim.restore(record.state)
    token = secrets.token_urlsafe(32)
    runner.persister.adopt(epoch, token)
    await runner.persister.flush()
    conn.log.info("session_resumed", where="store", last_seq=req.last_seq, replayed=len(logged))
    runner.start()
    attach = Attach(
        conn.client,
        [_resumed_event(runner, token)],
        asyncio.Event(),
        [t for _, t in logged],
        record.last_seq,
    )
    await runner.attach(attach, after=restored)


async def _resume_passthrough(
    conn: ClientSession, record: SessionRecord, req: ResumeRequest
) -> None:
    """The upstream keeps its own session and journal: relay the resume to it."""
    from proxy.passthrough import relay

    state = conn.state
    assert state.http is not None
    route = state.config.route_for(str(record.upstream.get("route", record.model)))
    if route is None:
        raise EXPIRED
    url = with_query(state.upstream_url(route), {"duplex": "1", "autostart": "0"})
    try:
        ws = await state.http.ws_connect(
            url, headers=dict(route.headers), max_msg_size=64 * 1024 * 1024
        )
    except Exception as exc:
        raise ResumeFailed("upstream_unavailable", f"cannot reach the upstream: {exc}") from None
    await ws.send_str(req.raw)
    conn.log = conn.log.bind(session_id=req.session_id, mode="passthrough")
    conn.log.info("session_resumed", where="upstream", last_seq=req.last_seq)
    await relay(conn, ws, on_resumed=lambda token: _rebind(conn, record, token))


async def _rebind(conn: ClientSession, record: SessionRecord, token: str) -> None:
    """The upstream rotated its resume token: remember the new one (hashed)."""
    from proxy.store.base import hash_token

    store = conn.state.store
    if store is None:
        return
    try:
        epoch = await store.take_over(record.session_id, conn.state.replica_id, record.epoch)
        record.epoch, record.token_hash = epoch, hash_token(token)
        await store.save(record)
    except (LeaseLost, StoreUnavailable) as exc:
        conn.log.warning("passthrough_rebind_failed", error=type(exc).__name__)
