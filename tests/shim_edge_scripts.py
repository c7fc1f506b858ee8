"""Emulated sessions by script for the shim's edge tests: duplex_emulated over a
turn-based upstream, and the relay (barge_in_emulated) whose upstream numbers its events
as its journal does; a VAD turn with its response, the relay's responses and a cut,
and the errors and events they send the client."""

from __future__ import annotations

from typing import Any

from shim.actions import Action
from shim.dialects.duplex_relay import BargeInRelaySession
from shim.dialects.turn_based import TurnBasedSession
from shim.inputs import UpstreamReattached
from shim.session import ShimSettings
from shim.vad_gate import VadParams
from tests.shim_script import Script, client_events, pcm_b64

SID = "sess_0123456789abcdef"
TURN = [0.05] * 5 + [0.9] * 20 + [0.05] * 20  # a VAD turn: speech then 640 ms of silence
T_UNKNOWN = "item_truncate_invalid_item_id"  # GA: an unknown item, for a truncate


def turn_based(min_barge_in_ms: int = 200, **kw: Any) -> Script:
    settings = ShimSettings(
        vad=VadParams(), min_barge_in_ms=min_barge_in_ms, echo_suppression=False, **kw
    )
    return Script(TurnBasedSession(SID, "demo", "demo-up", settings))


class Relay(Script):
    """A relay script whose upstream numbers its events as its journal does."""

    seq = 0

    def up(self, event: dict[str, Any]) -> list[Action]:
        self.seq += 1
        return self.upstream({**event, "server_event_seq": self.seq})


def relay(truncates: bool = False, min_barge_in_ms: int = 200) -> Relay:
    settings = ShimSettings(vad=VadParams(), min_barge_in_ms=min_barge_in_ms)
    caps = {"supports_barge_in": False, "supports_audio_truncate": truncates}
    sc = Relay(BargeInRelaySession(SID, "demo", settings, caps))
    created = {"type": "session.created", "session": {"id": "up-1"}, "resume_token": "tk"}
    sc.s.handle(UpstreamReattached(created, 0.0))
    return sc


def turn_audio(sc: Script, ms: int = 100, rate: int = 24000) -> list[Action]:
    return sc.upstream(
        {"type": "response.output_audio.delta", "audio": pcm_b64(ms, rate), "sample_rate_hz": rate}
    )


def start_turn(sc: Script, audio_ms: int = 1000) -> str:
    """A VAD turn and its response with ``audio_ms`` of assistant audio sent; its id."""
    out = sc.speak(TURN)
    (created,) = [e for e in client_events(out) if e["type"] == "response.created"]
    for _ in range(audio_ms // 100):
        turn_audio(sc)
    return str(created["response"]["id"])


def errors(actions: list[Action]) -> list[dict[str, Any]]:
    return [e["error"] for e in client_events(actions) if e["type"] == "error"]


def the(events: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    (event,) = [e for e in events if e["type"] == kind]
    return event


RID = "resp-up-1"
AID = f"item_{RID}"


def relay_respond(sc: Relay, chunks: int = 10, rate: int = 24000, rid: str = RID) -> list[Action]:
    out = sc.up({"type": "response.created", "response": {"id": rid}})
    for _ in range(chunks):
        out += sc.up(
            {
                "type": "response.output_audio.delta",
                "response_id": rid,
                "item_id": f"item_{rid}",
                "delta": pcm_b64(100, rate),
                "sample_rate_hz": rate,
            }
        )
    return out


def relay_done(sc: Relay, rid: str = RID) -> list[Action]:
    return sc.up({"type": "response.done", "response": {"id": rid}})


def cut(sc: Relay) -> list[Action]:
    """User speech over the playing response, long enough to cut it."""
    return sc.speak([0.9] * 12)
