"""What a GA client's ``session.update`` means to a duplex upstream.

An OpenAI GA client assumes server VAD when it says nothing about turn detection and
declares 24 kHz PCM16 input unless it says otherwise; a vLLM-Omni duplex upstream
detects turns only under ``turn_detection.type = "server_vad"`` and reads 16 kHz input
unless the session declares its rate (``docs/fidelity.md``, rows 2 and 12). So the
upstream gets the turn detection and the input format the client's session implies,
in the form it reads, and nothing GA-only it would refuse (the GA session ``type``,
GA turn-detection fields such as ``idle_timeout_ms`` or ``semantic_vad``).

The upstream's overlap policy follows from its turn detection (server VAD drives its
own barge-in); the proxy keeps undecided overlap from it (``relay_gate.py``), so the
barge-in decision stays the proxy's.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from shim.audio import PCM_F32, AudioFormat
from shim.g711 import G711_ENCODINGS as G711
from shim.session_config import (
    ClientSessionConfig,
    SessionConfigError,
    TurnDetection,
    apply_session_update,
)
from shim.upstream_input import declared_float_input, state_input
from shim.vad_gate import VadParams

# vLLM-Omni 0.30.0 refuses a server-VAD threshold at or below Silero's floor, 0.15
# (``engine/duplex/turn_detection.py``, ``validate_realtime_turn_detection``: it must
# be greater). A lower one goes up as 0.16, the nearest it takes that a turn can end
# under: its VAD ends a turn below ``max(threshold - 0.15, 0.01)`` (``engine/duplex/
# vad.py``), 0.01 for any threshold up to 0.16.
UPSTREAM_MIN_THRESHOLD = 0.15
UPSTREAM_LOWEST_THRESHOLD = 0.16


def _session_of(event: dict[str, Any]) -> dict[str, Any]:
    nested = event.get("session")
    if isinstance(nested, dict):
        return nested
    return {k: v for k, v in event.items() if k not in ("type", "event_id")}


def _mentions_turn_detection(session: dict[str, Any]) -> bool:
    audio = session.get("audio")
    audio_in = audio.get("input") if isinstance(audio, dict) else None
    return "turn_detection" in session or (
        isinstance(audio_in, dict) and "turn_detection" in audio_in
    )


def _mentions_input_format(session: dict[str, Any]) -> bool:
    audio = session.get("audio")
    audio_in = audio.get("input") if isinstance(audio, dict) else None
    keys = ("input_audio_format", "sample_rate_hz")
    return any(k in session for k in keys) or (
        isinstance(audio_in, dict) and ("format" in audio_in or "sample_rate_hz" in audio_in)
    )


# The output format's key besides GA's ``audio.output.format`` (the beta API's).
OUTPUT_KEYS = ("output_audio_format",)


def _mentions_output_format(session: dict[str, Any]) -> bool:
    audio = session.get("audio")
    audio_out = audio.get("output") if isinstance(audio, dict) else None
    return any(k in session for k in OUTPUT_KEYS) or (
        isinstance(audio_out, dict) and "format" in audio_out
    )


def upstream_session(
    session: dict[str, Any],
    cfg: ClientSessionConfig,
    opening: bool,
    pinned: AudioFormat | None = None,
) -> dict[str, Any]:
    """The session object the upstream gets for a GA client's ``session``, given the
    client's config after it (``cfg``). At the opening the GA defaults are stated even
    when the client left them out; later updates state only what they change. A
    ``pinned`` input format (``shim/upstream_input.py``) is stated instead of the
    client's: the proxy converts the client's audio to it."""
    out = copy.deepcopy(session)
    out.pop("type", None)
    # The route names the upstream's model (docs/protocol.md, "Endpoints"); GA clients
    # such as the Agents SDK name theirs in every update, which vLLM-Omni refuses
    # (model_update_unsupported) once its session is open.
    out.pop("model", None)
    # vLLM-Omni's own name for the output format, not GA's or the beta API's: the
    # proxy reads neither it nor its value, so the upstream must not get it either.
    out.pop("response_format", None)
    out.pop("turn_detection", None)
    for key in ("input_audio_format", "sample_rate_hz"):
        out.pop(key, None)
    audio = out.get("audio")
    if isinstance(audio, dict) and isinstance(audio.get("input"), dict):
        audio_in = {
            k: v
            for k, v in audio["input"].items()
            if k not in ("turn_detection", "format", "sample_rate_hz")
        }
        audio["input"] = audio_in
    if cfg.output_format.encoding in G711 and _mentions_output_format(out):
        # The proxy encodes G.711 itself: the upstream speaks PCM16, whatever key the
        # client named it by (vLLM-Omni reads the beta key before GA's and would send
        # G.711 the proxy then takes for PCM16).
        for key in OUTPUT_KEYS:
            out.pop(key, None)
        audio = out.get("audio")
        audio = out["audio"] = audio if isinstance(audio, dict) else {}
        a_out = audio.get("output")
        a_out = a_out if isinstance(a_out, dict) else {}
        drop = ("format", "sample_rate_hz", "sample_rate")  # as GA's format object says
        audio["output"] = {
            **{k: v for k, v in a_out.items() if k not in drop},
            "format": {"type": "audio/pcm"},
        }
    if opening or _mentions_turn_detection(session):
        out["turn_detection"] = upstream_turn_detection(cfg.turn)
    if pinned is not None and (opening or _mentions_input_format(session)):
        state_input(out, pinned)
    elif opening or _mentions_input_format(session):
        fmt = cfg.input_format
        # G.711 goes up decoded to PCM16 at its 8 kHz (dialects/relay_upstream_audio.py).
        spec = {"type": "audio/pcm_f32le" if fmt.encoding == PCM_F32 else "audio/pcm"}
        out["input_audio_format"] = spec["type"]
        out["sample_rate_hz"] = fmt.rate_hz
    return out


def upstream_turn_detection(turn: TurnDetection) -> dict[str, Any] | None:
    """The session's turn detection as vLLM-Omni reads it: server VAD (the upstream
    detects turns and answers them) with the session's values, which start from the
    ``[vad]`` section, as the proxy's own VAD does; null: the client commits and asks
    for the response itself. Only fields vLLM-Omni accepts: a threshold it refuses (0.15
    or below) goes up as the nearest it takes, 0.16, not left out (its 0.5 would hold,
    the whole object being replaced on each update); GA-only fields never go."""
    if turn.vad is None:
        return None
    vad: dict[str, Any] = {"type": "server_vad"}
    threshold = turn.vad.threshold
    vad["threshold"] = (
        threshold if threshold > UPSTREAM_MIN_THRESHOLD else UPSTREAM_LOWEST_THRESHOLD
    )
    vad["prefix_padding_ms"] = turn.vad.prefix_padding_ms
    # Where the client set it (or semantic_vad's eagerness did).
    vad["silence_duration_ms"] = turn.vad.silence_duration_ms
    vad["min_speech_duration_ms"] = turn.vad.min_speech_ms
    if not turn.create_response:
        # GA's create_response: false (a VAD commit only commits; the client asks for
        # the response) is the upstream's own server-VAD flag too (docs/fidelity.md, row 2).
        vad["create_response"] = False
    return vad


def upstream_update(ev: dict[str, Any], cfg: ClientSessionConfig) -> dict[str, Any]:
    """A GA client's later ``session.update`` as the upstream gets it."""
    out: dict[str, Any] = {"type": "session.update", "session": {}}
    if isinstance(ev.get("event_id"), str):
        out["event_id"] = ev["event_id"]
    out["session"] = upstream_session(_session_of(ev), cfg, opening=False)
    return out


def opening_session(
    session: dict[str, Any] | None,
    route_defaults: Mapping[str, Any] | None = None,
    vad: VadParams | None = None,
) -> dict[str, Any]:
    """The session a GA client's connection opens the upstream with: its own opening
    update if it spoke first, over GA's defaults with server VAD from ``vad`` (the
    ``[vad]`` section, as the proxy's session starts: ``shim/session.py``), as the
    upstream reads it, keeping a float input format the route declares
    (``route_defaults``: its ``session_defaults``). An idle timeout it asks for is left
    out (the upstream takes the turns and has none) and the rest kept; the client is
    told of that refusal after ``session.created`` (``proxy/emulated/shim_setup.py``,
    ``apply_opening``). An update the proxy refuses changes nothing: the upstream opens
    as the proxy's session starts, and the client is told why when the session runs."""
    vad = vad if vad is not None else VadParams()
    start = ClientSessionConfig(turn=TurnDetection(vad))
    raw = session or {}
    try:
        cfg = apply_session_update(start, {"session": raw}, vad, idle_timeouts=False)
    except SessionConfigError:
        raw, cfg = {}, start
    return upstream_session(raw, cfg, opening=True, pinned=declared_float_input(route_defaults))
