"""A GA client's instructions updates to a duplex relay by script, for the tests of what
fixes them upstream (``shim/dialects/relay_context_lock.py``): a relay over an upstream
with given capabilities, an update and whether it goes upstream, a move to another
replica, a quiet turn."""

from __future__ import annotations

from typing import Any

import numpy as np
import orjson

from shim.audio import b64encode
from shim.dialects.ga_relay import GaRelaySession
from shim.session import ShimSettings
from shim.vad_gate import VadParams
from tests.shim_ga_resumable import UP, ga
from tests.shim_script import Script, client_events, upstream_events

USER_TEXT = {
    "type": "conversation.item.create",
    "item": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
}


def make_with(**caps: Any) -> Script:
    """A GA relay over an upstream with these capabilities, bound."""
    settings = ShimSettings(vad=VadParams(), min_barge_in_ms=200, echo_suppression=False)
    session = GaRelaySession(
        "sess_0123456789abcdef", "m", settings, {"supports_barge_in": True, **caps}
    )
    session.bind_upstream(
        {"type": "session.created", "session": {"id": UP}, "resume_token": "tok-1"}
    )
    return Script(session)


def changes(sc: Script, to: str = "changed") -> bool:
    """Whether an instructions change goes upstream now (else it is refused)."""
    sent, told = update(sc, {"instructions": to})
    kinds = [e["type"] for e in told]
    assert kinds in (["session.updated"], ["error", "session.updated"]), told
    assert ("instructions" in sent) is (kinds == ["session.updated"]), sent
    return kinds == ["session.updated"]


def update(sc: Script, session: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The session the upstream gets for the client's update, and what the client is told."""
    ev = {"type": "session.update", "event_id": "evt_i", "session": {"type": "realtime", **session}}
    out = sc.client(ev)
    [sent] = [e for e in upstream_events(out) if e["type"] == "session.update"]
    return dict(sent["session"]), client_events(out)


RESUMED = {"type": "session.resumed", "session_id": UP, "resume_token": "tok-2"}
FRESH = {"type": "session.created", "session": {"id": "up-2"}, "resume_token": "tok-2"}


def moved(sc: Script, resumed: dict[str, object] | None = RESUMED) -> Script:
    """The session taken from its snapshot on another replica, whose route opens
    upstream sessions without ``auto_response``."""
    snap = orjson.loads(orjson.dumps(sc.s.snapshot()))
    m = make_with(chunk_period_ms=80)
    ga(m).restore(snap, resumed, now=sc.now)
    return m


def _tone(sc: Script, ms: int, rms: float) -> None:
    n = sc.rate * ms // 1000
    t = np.arange(n) / sc.rate
    samples = (np.sin(2 * np.pi * 300 * t) * rms * np.sqrt(2) * 32768).astype("<i2")
    sc.client({"type": "input_audio_buffer.append", "audio": b64encode(samples.tobytes())})


def quiet_turn(sc: Script, rms: float) -> None:
    _tone(sc, 300, rms)
    sc.client({"type": "input_audio_buffer.commit", "response_create": True})
