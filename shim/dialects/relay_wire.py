"""Event helpers of the barge-in relay: which response an event names, and a client's
settings as the upstream gets them."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from shim.g711 import G711_ENCODINGS
from shim.session_config import ClientSessionConfig, SessionConfigError, apply_session_update
from shim.vad_gate import VadParams


def response_id(ev: Mapping[str, Any]) -> Any:
    """The response an upstream event belongs to, if it names one."""
    rid = ev.get("response_id")
    if rid is None and isinstance(ev.get("response"), dict):
        rid = ev["response"].get("id")
    return rid


def upstream_settings(ev: Mapping[str, Any]) -> dict[str, Any]:
    """A client's ``session.update`` as the upstream gets it: whole, turn detection
    included. The proxy's own VAD reads it too (to decide barge-ins), but a vLLM-Omni
    upstream detects turns only under ``server_vad`` and answers nothing without it
    (docs/fidelity.md, row 2), so a native client's choice must reach it."""
    return copy.deepcopy(dict(ev))


def relayed_g711(
    cfg: ClientSessionConfig, ev: dict[str, Any], vad: VadParams
) -> SessionConfigError | None:
    """A native client's G.711 is refused, as before: its appends and the upstream's
    audio pass the relay undecoded, as PCM (a GA client's G.711 is converted, in
    ``shim/dialects/ga_relay.py``; docs/protocol.md, "Audio formats")."""
    try:
        after = apply_session_update(cfg, ev, vad)
    except SessionConfigError as exc:
        return exc
    for part, fmt in (("input", after.input_format), ("output", after.output_format)):
        if fmt.encoding in G711_ENCODINGS:
            return SessionConfigError(
                "unsupported_audio_format",
                f"audio.{part}.format: G.711 is converted for GA clients only "
                "(/v1/realtime without ?duplex=1); use PCM16",
                f"audio.{part}.format",
            )
    return None
