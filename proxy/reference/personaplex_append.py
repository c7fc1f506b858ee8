"""An append to a PersonaPlex session, as vLLM-Omni 0.30.0's runner handles it.

The envelope decodes the append (``protocol/realtime/audio_input.py``): bad base64 or
an unknown format are refused before the session; ``pcm_f32le`` passes through as
declared, PCM16/G.711 become 16 kHz float. The session's detector hears the append
(server VAD runs on every append, ahead of the model's buffer: ``runner.py`` append
path); the model's buffer (``personaplex_frames.py``) then takes it, refusing any
other format or rate with its own message as a journaled ``bad_event``. Without
``extra_body.auto_response`` an append that does not look like speech never reaches
the buffer ("turn-mode only: skip silent chunks").
"""

from __future__ import annotations

import binascii

import numpy as np
import pybase64

from proxy.reference.duplex_formats import parse_format
from proxy.reference.duplex_input import CommandError
from proxy.reference.duplex_port import rms
from proxy.reference.duplex_session import DuplexSession
from proxy.reference.personaplex_frames import PersonaPlexFrames, PersonaPlexInputError


def _declared(event: dict[str, object], default_fmt: str, default_rate: int) -> tuple[str, int]:
    """The format and rate the model is given for this append after the envelope."""
    fmt, format_rate = parse_format(
        event.get("format") or event.get("input_audio_format") or default_fmt
    )
    if not (isinstance(fmt, str) and fmt.lower() == "pcm_f32le"):
        return "pcm_f32le", 16000  # the envelope's conversion of PCM16 / G.711
    declared = event.get("sample_rate_hz") or event.get("sample_rate") or format_rate
    rate = declared if isinstance(declared, int | float) and not isinstance(declared, bool) else 0
    return "pcm_f32le", int(rate) or default_rate


def append(session: DuplexSession, event: dict[str, object], frames: PersonaPlexFrames) -> None:
    defaults = session.defaults
    fmt, rate = _declared(event, defaults.fmt, defaults.rate_hz)
    # Envelope refusals (format, base64, empty) come first, from the shared decoder; it
    # reads float at whatever rate was declared, as the envelope does.
    decoded = session.decoder.decode(event, defaults, f32_rate_hz=rate)
    audio = event.get("audio") or event.get("delta")
    try:
        raw = pybase64.b64decode(str(audio), validate=True) if decoded.native_float else b""
    except (binascii.Error, ValueError):
        raise CommandError("bad_audio", "input audio is not valid base64") from None
    speech = decoded.is_speech
    if speech is None:  # judged on the append as sent (overlap_policy.input_looks_like_speech)
        heard = np.frombuffer(raw, dtype="<f4") if decoded.native_float else decoded.samples
        speech = bool(heard.size) and rms(heard) >= session.options.append_speech_rms
    auto = session.auto_response
    if not auto and not speech:
        session.model.on_append(decoded)  # heard by the detector, never buffered
        return
    try:
        if not decoded.native_float:
            raise PersonaPlexInputError("PersonaPlex sample_rate_hz must be 24000")
        frames.append(fmt, rate, raw, allow_emit=auto)
    except PersonaPlexInputError as exc:
        session.emit_error("bad_event", str(exc))
        return
    session.model.on_append(decoded)
