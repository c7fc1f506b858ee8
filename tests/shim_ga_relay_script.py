"""A GA relay session (``shim/dialects/ga_relay.py``) driven by script, and the upstream's
answer it relays: the ids, the session, an answer's audio deltas, the client's truncate."""

from __future__ import annotations

from typing import Any

from openai.types.realtime import RealtimeServerEvent
from pydantic import TypeAdapter

from shim.dialects.ga_relay import GaRelaySession
from shim.session import ShimSettings
from shim.vad_gate import VadParams
from tests.shim_script import Script, pcm_b64

RID = "resp-duplex-1-0-abcd1234"
AID = f"item_{RID}"
GA: TypeAdapter[Any] = TypeAdapter(RealtimeServerEvent)
# Server VAD as the upstream gets it with the built-in [vad] values (shim/ga_upstream.py).
SERVER_VAD = {
    "type": "server_vad",
    "threshold": 0.5,
    "prefix_padding_ms": 300,
    "silence_duration_ms": 500,
    "min_speech_duration_ms": 150,
}


def make(truncates: bool = False) -> Script:
    settings = ShimSettings(vad=VadParams(), min_barge_in_ms=200, echo_suppression=False)
    caps = {"supports_barge_in": True, "supports_audio_truncate": truncates}
    session = GaRelaySession("sess_0123456789abcdef", "m", settings, caps)
    session.bind_upstream({"type": "session.created", "session": {"id": "up-1"}})
    return Script(session)


def answer_delta(**extra: Any) -> dict[str, Any]:
    """100 ms of the answer ``RID`` from the upstream, with ``extra`` fields."""
    return {
        "type": "response.output_audio.delta",
        "response_id": RID,
        "item_id": AID,
        "output_index": 0,
        "content_index": 0,
        "delta": pcm_b64(100, 24000),
        **extra,
    }


def answer(sc: Script, chunks: int = 5, seq: int = 10) -> None:
    sc.upstream({"type": "response.created", "response": {"id": RID}, "server_event_seq": seq})
    for n in range(chunks):
        sc.upstream(answer_delta(sample_rate_hz=24000, server_event_seq=seq + 1 + n))


def truncate(item_id: str, end_ms: int) -> dict[str, Any]:
    return {
        "type": "conversation.item.truncate",
        "item_id": item_id,
        "content_index": 0,
        "audio_end_ms": end_ms,
    }
