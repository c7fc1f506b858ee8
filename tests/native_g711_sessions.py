"""Native-client sessions by script for the G.711 and input-rate tests
(tests/test_native_g711_*.py): a relay and a turn-based session as a native client
opens them, a ``session.update`` of given fields, base64 of raw audio.
"""

from __future__ import annotations

from typing import Any

import pybase64

from shim.dialects.duplex_relay import BargeInRelaySession
from shim.dialects.turn_based import TurnBasedSession
from shim.session import EmulatedSession, ShimSettings
from shim.vad_gate import VadParams

SETTINGS = ShimSettings(vad=VadParams(), echo_suppression=False)
SID = "sess_0123456789abcdef"
ULAW_TOLD = {"type": "audio/g711_ulaw", "rate": 16000}


def native_sessions() -> list[EmulatedSession]:
    return [
        BargeInRelaySession(SID, "m", SETTINGS, {}),
        TurnBasedSession(SID, "m", "m-up", SETTINGS, native_client=True),
    ]


def update(**session: Any) -> dict[str, Any]:
    return {"type": "session.update", "session": session}


def b64(raw: bytes) -> str:
    return pybase64.b64encode(raw).decode()
