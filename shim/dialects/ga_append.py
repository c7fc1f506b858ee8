"""A GA client's append as the duplex upstream reads it, held or not.

The proxy holds a GA client's audio from the upstream while an answer owns the turn
(``relay_gate.py``) and behind a commit that waits for it (``relay_turn_wait.py``),
and converts each append only as it goes (``relay_upstream_audio.py``). The client
may declare another input format meanwhile; the upstream hears of it at once, or, in
order, before the held audio. So when the format changes, every append still held
is stamped with the format it was sent in, as vLLM-Omni's own clients tag each
append (``format``, ``sample_rate_hz``: ``docs/protocol.md``, "Native clients"), and
goes on read that way. G.711, which vLLM-Omni cannot name, is decoded to PCM16 at its
8 kHz then.
"""

from __future__ import annotations

from typing import Any

from shim.actions import Action, SendUpstream
from shim.audio import (
    PCM16,
    PCM_F32,
    AudioFormat,
    b64decode,
    b64encode,
    decode_samples,
    encode_samples,
)
from shim.dialects.relay_gate import AudioGate
from shim.dialects.relay_turn_wait import TurnWait
from shim.dialects.relay_upstream_audio import UpstreamAudio
from shim.native_client import append_format

APPEND = "input_audio_buffer.append"
STAMP = ("format", "sample_rate_hz")
_NAMES = {PCM16: "pcm16", PCM_F32: "pcm_f32le"}


def stamped(ev: dict[str, Any]) -> bool:
    return all(key in ev for key in STAMP)


def stamp(ev: dict[str, Any], fmt: AudioFormat) -> None:
    """``ev`` (held, so the session's own) now says the format it was sent in."""
    if stamped(ev) or not isinstance(ev.get("audio"), str):
        return
    if fmt.encoding not in _NAMES:  # G.711: PCM16 at its rate, as it goes upstream
        pcm = AudioFormat(PCM16, fmt.rate_hz)
        ev["audio"] = b64encode(encode_samples(decode_samples(b64decode(ev["audio"]), fmt), pcm))
        fmt = pcm
    ev["format"], ev["sample_rate_hz"] = _NAMES[fmt.encoding], fmt.rate_hz


def stamp_held(gate: AudioGate, wait: TurnWait, fmt: AudioFormat) -> None:
    """The input format changes from ``fmt``: every append still held says it was ``fmt``."""
    for _, _, ev in gate.held:
        stamp(ev, fmt)
    for action, _, _ in wait.queue or []:
        if isinstance(action, SendUpstream) and action.event.get("type") == APPEND:
            stamp(action.event, fmt)


def upstream_form(
    audio: UpstreamAudio, ev: dict[str, Any], declared: AudioFormat
) -> list[Action] | None:
    """The append as it goes upstream, converted; None when it goes as it is (a
    stamped one then tells the upstream its format itself)."""
    if not stamped(ev):
        return audio.appends(ev, declared)
    bare = {k: v for k, v in ev.items() if k not in STAMP}
    return audio.appends(bare, append_format(ev, declared))
