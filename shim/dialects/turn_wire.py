"""Events of the turn-based dialect, both ways: what opens a response for the client,
and a user turn as the turn-based upstream takes it (``docs/protocol.md``).

The upstream speaks vLLM(-Omni)'s turn-based realtime dialect:
``session.update{model}``, ``input_audio_buffer.append{audio}`` (16 kHz PCM16),
``input_audio_buffer.commit{final}``, and it answers with ``transcription.delta``
(the assistant's text), ``response.output_audio.delta{audio, sample_rate_hz}``,
``transcription.done``, ``response.output_audio.done``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from shim import wire
from shim.actions import Action, SendClient, SendUpstream
from shim.audio import PCM16, PCMA, PCMU, AudioFormat, Int16Array, b64encode

UPSTREAM_RATE = 16000
# Largest audio chunk per upstream append (keeps frames well under size limits).
APPEND_CHUNK_SAMPLES = UPSTREAM_RATE


def open_upstream(upstream_model: str) -> SendUpstream:
    """What a fresh upstream connection needs before it takes a turn."""
    return SendUpstream({"type": "session.update", "model": upstream_model})


def user_turn(audio: Int16Array) -> list[Action]:
    """One committed user turn, as the upstream takes it."""
    out: list[Action] = [SendUpstream({"type": "input_audio_buffer.commit", "final": False})]
    for i in range(0, max(audio.size, 1), APPEND_CHUNK_SAMPLES):
        chunk = audio[i : i + APPEND_CHUNK_SAMPLES]
        if chunk.size:
            out.append(
                SendUpstream(
                    {"type": "input_audio_buffer.append", "audio": b64encode(chunk.tobytes())}
                )
            )
    out.append(SendUpstream({"type": "input_audio_buffer.commit", "final": True}))
    return out


def committed_turn(item_id: str, previous_item_id: str | None) -> list[Action]:
    """The client's view of a committed user turn."""
    item = wire.user_item(item_id)
    return [
        SendClient(wire.committed(item_id, previous_item_id)),
        SendClient(wire.item_event("added", item, previous_item_id)),
        SendClient(wire.item_event("done", item, previous_item_id)),
    ]


def response_opening(rid: str, aid: str, previous_item_id: str | None) -> list[Action]:
    """Every event that opens a spoken response, in GA order."""
    item = wire.assistant_item(aid, "in_progress", None)
    return [
        SendClient({"type": "response.created", "response": wire.response(rid, "in_progress", [])}),
        SendClient(
            {
                "type": "response.output_item.added",
                "response_id": rid,
                "output_index": 0,
                "item": item,
            }
        ),
        SendClient(wire.item_event("added", item, previous_item_id)),
        SendClient(
            {
                "type": "response.content_part.added",
                **wire.part_ids(rid, aid),
                "part": {"type": "audio", "transcript": ""},
            }
        ),
    ]


def audio_delta(rid: str, aid: str, delta: str | None) -> dict[str, Any]:
    return {"type": "response.output_audio.delta", **wire.part_ids(rid, aid), "delta": delta}


# vLLM-Omni's names of the formats it labels its audio deltas with
# (``protocol/realtime/formats.py``, ``realtime_output_format``).
_NATIVE_NAMES = {PCM16: "pcm16", PCMU: "g711_ulaw", PCMA: "g711_alaw"}


def delta_for(
    rid: str, aid: str, out: AudioFormat, native: bool
) -> Callable[[str | None], dict[str, Any]]:
    """The client's delta event for each chunk of the answer: to a native client
    labelled with its ``format`` and ``sample_rate_hz``, as vLLM-Omni sends every
    delta (``engine/duplex/realtime_events.py``); to a GA client as GA has it."""
    labels = {
        "format": _NATIVE_NAMES.get(out.encoding, out.encoding),
        "sample_rate_hz": out.rate_hz,
    }
    return lambda delta: {**audio_delta(rid, aid, delta), **(labels if native else {})}


def transcript_delta(rid: str, aid: str, delta: str) -> dict[str, Any]:
    return {
        "type": "response.output_audio_transcript.delta",
        **wire.part_ids(rid, aid),
        "delta": delta,
    }


def error_message(ev: dict[str, Any]) -> str:
    """The text of an upstream ``error``: flat ``{error: "<text>"}`` in this dialect."""
    err = ev.get("error")
    if isinstance(err, str):
        return err
    return str(err.get("message", "")) if isinstance(err, dict) else ""
