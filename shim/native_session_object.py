"""The session object a vLLM-Omni-native client is told, in vLLM-Omni's shape.

vLLM-Omni's ``session.created`` / ``session.updated`` (its
``engine/duplex/realtime_events.py``, ``realtime_session_payload``) name the formats
flat (``input_audio_format: "g711_ulaw"``) and under ``audio`` as format objects in its
own names with their rate (``{"type": "audio/g711_ulaw", "rate": 16000}``), the input
rate again as ``audio.input.sample_rate_hz``, and turn detection at the top. A native
client may send that object back in a ``session.update``; GA's shape
(``{"type": "audio/pcmu"}``) names formats vLLM-Omni refuses, so a native client is
told its session in vLLM-Omni's shape (docs/protocol.md, "Native clients").

Over a duplex upstream the upstream detects the turns, so the turn detection told is the
one it runs, as vLLM-Omni tells it (``upstream_turn_detection``), never the proxy's
``[vad]`` values. On a resume over a duplex upstream the client is told the proxy's
current object over
the upstream's saved one (``resumed_over_upstream``): the upstream's other keys stay,
but every other spelling of a fact the current object tells carries the current value,
and the upstream's runtime state from the opening is gone.
"""

from __future__ import annotations

from typing import Any

from shim.audio import PCM16, PCM_F32, PCMA, PCMU, AudioFormat
from shim.native_turns import PROXY_FIELDS, SERVER_VAD_FIELDS, as_run, declared

# The proxy's encodings in vLLM-Omni's names: flat, and as a format object's type.
_FLAT = {PCM16: "pcm16", PCM_F32: "pcm_f32le", PCMU: "g711_ulaw", PCMA: "g711_alaw"}
_TYPED = {
    PCM16: "audio/pcm",
    PCM_F32: "audio/pcm_f32le",
    PCMU: "audio/g711_ulaw",
    PCMA: "audio/g711_alaw",
}


# The upstream's own run as ``as_public_dict`` told it at the opening
# (``engine/duplex/session/engine_session.py``): after a resume it no longer holds.
_RUNTIME = frozenset(
    {
        "state",
        "turn_state",
        "epoch",
        "turn_id",
        "active_request_id",
        "active_response_id",
        "active_response_turn_id",
        "playback",
    }
)
# Where vLLM-Omni reads the input rate before the format's own (``sample_rate_hz`` or
# ``sample_rate``, flat or under ``audio.input``: ``protocol/realtime/session.py``,
# ``apply_realtime_session_defaults``) and the output rate beside its format.
_RATES = ("sample_rate_hz", "sample_rate")


def _implied_rate(fmt: AudioFormat) -> int:
    """The output rate vLLM-Omni reads from a flat format name alone."""
    return 8000 if fmt.encoding in (PCMU, PCMA) else 24000


def native_format(fmt: AudioFormat) -> dict[str, Any]:
    """A format object as vLLM-Omni writes it (``realtime_audio_format_object``)."""
    return {"type": _TYPED.get(fmt.encoding, "audio/pcm"), "rate": fmt.rate_hz}


def native_session_object(
    session_id: str,
    model: str,
    formats: tuple[AudioFormat, AudioFormat],
    turn_detection: dict[str, Any] | None,
    instructions: str | None,
    transcription: dict[str, Any] | None,
) -> dict[str, Any]:
    """The session (``formats``: input, output) as vLLM-Omni's object tells it; its
    turn detection with only the fields vLLM-Omni takes back (and the proxy's own)."""
    inp, out = formats
    if turn_detection is not None:
        kept = SERVER_VAD_FIELDS | PROXY_FIELDS
        turn_detection = {k: v for k, v in turn_detection.items() if k in kept}
    flat_out = _FLAT.get(out.encoding, "pcm16")
    return {
        "object": "realtime.session",
        "type": "realtime",
        "id": session_id,
        "model": model,
        "modalities": ["text", "audio"],
        "output_modalities": ["text", "audio"],
        "instructions": instructions,
        "input_audio_format": _FLAT.get(inp.encoding, "pcm16"),
        # A flat name is read first and carries no rate: the format itself where its
        # rate is not the one the name implies, so the object reads back as it is.
        "output_audio_format": flat_out
        if out.rate_hz == _implied_rate(out)
        else native_format(out),
        "audio": {
            "input": {"format": native_format(inp), "sample_rate_hz": inp.rate_hz},
            "output": {"format": native_format(out)},
        },
        "turn_detection": turn_detection,
        "input_audio_transcription": transcription,
        "tracing": None,
    }


def _overlap_policy(turn_detection: object) -> str:
    """The ``overlap_policy`` vLLM-Omni requires beside this turn detection
    (``engine/duplex/turn_detection.py``, ``validate_realtime_turn_detection``)."""
    return "listen_only" if turn_detection is None else "barge_in_on_speech"


def _side(upstream: object, current: dict[str, Any], rate: int, told: dict[str, Any]) -> Any:
    """One of ``audio.input`` / ``audio.output``: the upstream's keys, each spelling
    of the rate at ``rate``, each nested spelling of a top-level fact as ``told``."""
    out = dict(upstream) if isinstance(upstream, dict) else {}
    for key in _RATES:
        if key in out:
            out[key] = rate
    for key, value in told.items():
        if key in out:
            out[key] = value
    return out | current


def resumed_over_upstream(
    upstream: dict[str, Any], current: dict[str, Any], formats: tuple[AudioFormat, AudioFormat]
) -> dict[str, Any]:
    """``current`` (``native_session_object``'s, for ``formats``) over the upstream's
    saved object: its other keys stay, its runtime state goes, and each of its
    spellings of a rate, a format or the turn detection tells the current one."""
    inp, out = formats
    merged = {k: v for k, v in upstream.items() if k not in _RUNTIME}
    for key in _RATES:
        if key in merged:
            merged[key] = inp.rate_hz
    if "overlap_policy" in merged:
        merged["overlap_policy"] = _overlap_policy(current.get("turn_detection"))
    merged.update({k: v for k, v in current.items() if k != "audio"})
    audio = dict(upstream["audio"]) if isinstance(upstream.get("audio"), dict) else {}
    told_in = {
        "turn_detection": current.get("turn_detection"),
        "transcription": current.get("input_audio_transcription"),
    }
    now = current["audio"]
    audio["input"] = _side(audio.get("input"), now["input"], inp.rate_hz, told_in)
    audio["output"] = _side(audio.get("output"), now["output"], out.rate_hz, {})
    merged["audio"] = audio
    return merged


def upstream_turn_detection(
    kept_update: dict[str, Any] | None, upstream: dict[str, Any], proxy_turn: Any
) -> Any:
    """The turn detection a duplex upstream runs for a native client, as it tells it:
    the one the client's updates declared (``kept_update``, the barge-in relay's) over
    vLLM-Omni's defaults (``shim/native_turns.py``), else the upstream's own from the
    opening (``upstream``); with the proxy's own fields the client set (``proxy_turn``,
    the proxy's object), which only the proxy reads."""
    nested = kept_update.get("session") if kept_update is not None else None
    session = nested if isinstance(nested, dict) else kept_update or {}
    named, td = declared(session)
    told = as_run(td) if named else upstream.get("turn_detection")
    if isinstance(told, dict) and isinstance(proxy_turn, dict):
        told = told | {k: v for k, v in proxy_turn.items() if k in PROXY_FIELDS}
    return told
