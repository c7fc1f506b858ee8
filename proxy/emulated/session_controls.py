"""The session events the proxy answers itself in the emulated modes.

There the proxy owns the client-facing session (docs/protocol.md): it takes the
client's acks of its replay log, refuses a ``session.resume`` that is not a
connection's first event, ends the session on ``session.close`` and, from a native
client, on vLLM-Omni's other names for it (the runner's stop ends a duplex
upstream's session with it), and answers the turn dialect's heartbeat. Every other
event goes to the shim.
"""

from __future__ import annotations

from typing import Any, Protocol

from proxy.emulated.client_side import ClientSide
from shim.capabilities import Classification
from shim.journal import Journal

# vLLM-Omni's other names for session.close (engine/duplex/realtime_commands.py), its
# native clients' words: ``session.closed`` and the end, as for session.close.
CLOSE_ALIASES = frozenset({"close", "close_session"})


class ControlledSession(Protocol):
    session_id: str
    cls: Classification
    journal: Journal
    out: ClientSide

    async def close_by_client(self, reason: str) -> None: ...


def _ack_refusal(seq: object, head: int, native: bool) -> str:
    """Why an ack is refused: vLLM-Omni's words to a native client."""
    if not native:
        return "server_event_seq must be a sequence number already sent"
    if isinstance(seq, bool) or not isinstance(seq, int) or seq < 0:
        return "session.event_ack requires a non-negative server_event_seq"
    return f"acknowledged sequence {seq} is newer than journal head {head}"


async def answer_control(ev: dict[str, Any], session: ControlledSession) -> bool:
    """Answer ``ev`` if it is one of the proxy's own; False if the shim should have it."""
    session_id, journal, out = session.session_id, session.journal, session.out
    kind, native = ev["type"], not session.cls.ga_client
    event_id = ev.get("event_id") if isinstance(ev.get("event_id"), str) else None
    if kind == "session.event_ack":
        seq = ev.get("server_event_seq")
        if isinstance(seq, bool) or not isinstance(seq, int) or not journal.ack(seq):
            out.error("invalid_event_ack", _ack_refusal(seq, journal.seq, native), event_id)
        return True
    if kind == "session.resume":
        # vLLM-Omni's code and words to a native client (entrypoints/duplex/serving.py).
        code = "unsupported_session_resume" if native else "invalid_session_resume"
        out.error(code, "session.resume must be the first message of a new connection", event_id)
        return True
    if kind == "session.close" or (kind in CLOSE_ALIASES and native):
        reason = ev.get("reason")
        if not isinstance(reason, str):
            reason = "client_close"
        # vLLM-Omni's shape: the session's own close event rides along (empty here).
        closed = {"type": "session.closed", "session_id": session_id, "reason": reason}
        out.send(closed | {"event": {}})
        await session.close_by_client(reason)
        return True
    if kind == "session.heartbeat" and session.cls.kind == "turn":
        out.send({"type": "session.heartbeat_ack", "session_id": session_id})
        return True
    return False
