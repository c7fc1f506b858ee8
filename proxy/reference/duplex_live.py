"""A live duplex session's frames, as ``websocket.py`` reads them.

Read until the socket goes, idles past ``idle_timeout_s`` (a disconnect: grace for a
resumable session) or another connection takes the session over. A text frame larger
than ``MAX_EVENT_BYTES``, not JSON, or without a type is refused and the session goes
on; ``session.event_ack`` and a late ``session.resume`` are answered here, every other
event goes to its command (``duplex_commands.py``). A binary frame ends the session
(``transport_error``), as Starlette's ``receive_text`` fails on one.
"""

from __future__ import annotations

import json

from aiohttp import WSMsgType, web

from proxy.reference.duplex_commands import dispatch
from proxy.reference.duplex_input import CommandError
from proxy.reference.duplex_session import DuplexSession
from proxy.reference.outbound import Outbound
from proxy.reference.wire import duplex_error

#: ``websocket.py::MAX_EVENT_BYTES``: larger text frames get ``event_too_large``.
MAX_EVENT_BYTES = 15 * 1024 * 1024
#: Starlette's ``receive_text`` on a binary frame raises ``KeyError('text')``.
BINARY_MESSAGE = "'text'"


async def read_loop(ws: web.WebSocketResponse, out: Outbound, session: DuplexSession) -> None:
    """Each frame of the socket ``out`` writes to, while ``session`` is attached to it."""
    while session.is_current(out):
        try:
            msg = await ws.receive(timeout=session.settings.idle_timeout_s)
        except TimeoutError:
            # Receive idle: same as a disconnect (grace for a resumable session).
            session.detach(out)
            out.close(1000)
            return
        if not session.is_current(out):
            return
        if msg.type == WSMsgType.TEXT:
            _on_text(session, out, msg.data)
        elif msg.type == WSMsgType.BINARY:
            out.send(duplex_error("realtime_input_failed", BINARY_MESSAGE))
            session.close("transport_error")
            return
        else:
            return


def _on_text(session: DuplexSession, out: Outbound, raw: str) -> None:
    if len(raw.encode("utf-8")) > MAX_EVENT_BYTES:
        out.send(duplex_error("event_too_large", "Duplex event too large"))
        return
    try:
        event = json.loads(raw)
    except ValueError:
        out.send(duplex_error("invalid_json", "Invalid JSON event"))
        return
    if not isinstance(event, dict) or not isinstance(event.get("type"), str):
        out.send(duplex_error("bad_event", "Duplex event must be a JSON object with a type"))
        return
    event_id = event.get("event_id")
    if event["type"] == "session.event_ack":
        seq = event.get("server_event_seq")
        if not isinstance(seq, int) or seq < 0:
            message = "session.event_ack requires a non-negative server_event_seq"
            out.send(duplex_error("invalid_event_ack", message, event_id=event_id))
            return
        try:
            session.acknowledge(seq)
        except ValueError as exc:
            out.send(duplex_error("invalid_event_ack", str(exc), event_id=event_id))
        return
    if event["type"] == "session.resume":
        message = "session.resume must be the first message of a new connection"
        out.send(duplex_error("unsupported_session_resume", message, event_id=event_id))
        return
    run_event(session, out, event)


def run_event(session: DuplexSession, out: Outbound, event: dict[str, object]) -> None:
    """One event for the session's model (``duplex_commands.py``); its refusal to ``out``."""
    if not isinstance(event.get("type"), str):
        out.send(
            duplex_error(
                "bad_event", "Duplex event missing string type", event_id=event.get("event_id")
            )
        )
        return
    try:
        dispatch(session, event)
    except CommandError as exc:
        out.send(
            duplex_error(exc.code, exc.message, event_id=event.get("event_id"), param=exc.param)
        )
