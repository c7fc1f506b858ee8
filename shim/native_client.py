"""What vLLM-Omni's native duplex clients say beyond OpenAI GA, read for the emulated modes.

vLLM-Omni's own ``DuplexClient`` (``docs/protocol.md``, "Native clients") opens with
``extra_body: {"auto_response": true}`` and ``turn_detection: null``, tags every
append with its ``format`` and ``sample_rate_hz``, and ends its turn with
``input_audio_buffer.commit{final: true}``. On a vLLM-Omni duplex server a commit is
answered when it carries ``response_create: true`` or the session has
``extra_body.auto_response`` (whatever the commit says); otherwise it only
commits. The emulated modes keep those rules, so a native client gets the same
session through the proxy whatever the upstream speaks.
"""

from __future__ import annotations

import binascii
import math
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pybase64

from shim.audio import PCM16, PCM_F32, PCMA, PCMU, AudioError, AudioFormat, Int16Array
from shim.g711 import G711_ENCODINGS, G711_RATE_HZ
from shim.native_formats import format_rate, native_name
from shim.resample_low_delay import LowDelayResampler
from shim.session_config import MAX_RATE, MIN_RATE
from shim.settings import VAD_RATE
from shim.wire import NATIVE_NOT_FOUND, UNKNOWN_ITEM

# The encodings an append may name: vLLM-Omni's names (its
# ``protocol/realtime/formats.py``, ``parse_realtime_audio_format``; GA's ``audio/pcmu``
# is not one of them) and GA's PCM ones.
_APPEND_FORMATS = {
    **dict.fromkeys(("g711_ulaw", "audio/g711_ulaw", "g711-ulaw", "ulaw", "mulaw"), PCMU),
    **dict.fromkeys(("g711_alaw", "audio/g711_alaw", "g711-alaw", "alaw"), PCMA),
    "pcm16": PCM16,
    "pcm_s16le": PCM16,
    "s16le": PCM16,
    "audio/pcm": PCM16,
    "pcm": PCM16,
    "pcm_f32le": PCM_F32,
    "f32le": PCM_F32,
    "audio/pcm_f32le": PCM_F32,
}


@dataclass
class NativeOptions:
    """The session-wide native settings (kept in the snapshot)."""

    auto_response: bool = False

    def note_update(self, ev: dict[str, Any]) -> None:
        """Take ``extra_body.auto_response`` from a ``session.update`` that sets it."""
        session = ev.get("session")
        if not isinstance(session, dict):
            session = ev
        extra = session.get("extra_body")
        if isinstance(extra, dict) and isinstance(extra.get("auto_response"), bool):
            self.auto_response = extra["auto_response"]

    def commit_answers(self, ev: dict[str, Any]) -> bool:
        """Whether a client's ``input_audio_buffer.commit`` asks for an answer: its own
        ``response_create`` (or ``create_response``) ``true``, or the session's
        ``auto_response``, which a ``response_create: false`` does not turn off
        (vLLM-Omni's ``engine/duplex/session/runner.py``, ``_on_commit``)."""
        asked = ev.get("response_create", ev.get("create_response"))
        return asked is True or self.auto_response

    def to_wire(self) -> dict[str, Any]:
        return {"native": {"auto_response": True}} if self.auto_response else {}

    def restore(self, snap: dict[str, Any]) -> None:
        native = snap.get("native")
        self.auto_response = isinstance(native, dict) and native.get("auto_response") is True


# The proxy's own refusals of input it reads itself (``shim/client_events.py``,
# ``shim/audio.py``, ``shim/audio_formats.py``) -> vLLM-Omni's code and words for the
# same input (``protocol/realtime/audio_input.py``, ``protocol/realtime/formats.py``,
# ``engine/duplex/session/runner.py``, ``engine/duplex/realtime_commands.py``,
# ``engine/duplex/realtime_events.py``). Keyed by code and a pattern the proxy's
# message starts with; ``{name}`` is what it quoted. Float audio the proxy cannot
# read keeps its own words: vLLM-Omni has none of its own for it.
_NO_AUDIO = "input_audio_buffer.append requires audio and/or video_frames"
_NATIVE_WORDS = [
    ("invalid_audio", r"audio is not valid base64", "bad_audio", "input audio is not valid base64"),
    (
        "invalid_audio",
        r"\d+ bytes is not a whole number of pcm16 samples",
        "bad_audio",
        "input_audio_buffer.append pcm16 audio could not be decoded",
    ),
    ("invalid_audio", r"input_audio_buffer\.append carries no audio", "bad_event", _NO_AUDIO),
    ("invalid_event", r"input_audio_buffer\.append needs", "bad_event", _NO_AUDIO),
    (
        "invalid_event",
        r"playback\.ack requires",
        "bad_event",
        "playback.ack requires numeric played_ms",
    ),
    (
        "invalid_value",
        r"append sample_rate_hz",
        "bad_event",
        "sample_rate_hz must be between 8000 and 192000",
    ),
    ("unsupported_audio_format", r"append format", None, "Unsupported input_audio_format: {name}"),
    ("unsupported_audio_format", r"audio\.input\.", None, "Unsupported input_audio_format: {name}"),
    (
        "unsupported_audio_format",
        r"audio\.output\.",
        None,
        "Unsupported output_audio_format: {name}",
    ),
    *(
        (code, r"Error \w+ item: ", "item_not_found", NATIVE_NOT_FOUND + "{name}")
        for code, _ in UNKNOWN_ITEM.values()
    ),
]
_QUOTED = re.compile(r"'([^']*)'")
# An unknown item's id, whole: the client's, which may hold quotes (``wire.unknown_item``).
_ITEM_ID = re.compile(r"the item with id '(.*)' does not exist\.\Z", re.DOTALL)


def native_error(event: dict[str, Any]) -> dict[str, Any]:
    """An ``error`` as vLLM-Omni's duplex sessions send it: in its code and words
    where the proxy refused what vLLM-Omni refuses too (``_NATIVE_WORDS``), and
    ``event_id`` / ``param`` left out when they name nothing, never ``null`` (its
    ``protocol/realtime/events.py``, ``ErrorEvent``; ``docs/fidelity.md``, row 14)."""
    err = event.get("error")
    if event.get("type") != "error" or not isinstance(err, dict):
        return event
    code, message = err.get("code"), err.get("message")
    for ours, starts, theirs, words in _NATIVE_WORDS:
        if code == ours and isinstance(message, str) and re.match(starts, message):
            quoted = _ITEM_ID.search(message) or _QUOTED.search(message)
            err["code"] = theirs or code
            err["message"] = words.format(name=quoted.group(1) if quoted else "")
            err["param"] = None  # vLLM-Omni names none for these
            break
    for key in ("event_id", "param"):
        if key in err and err[key] is None:
            del err[key]
    return event


def native_done(event: dict[str, Any]) -> dict[str, Any]:
    """A completed ``response.done`` as vLLM-Omni's duplex sessions send it: its
    ``status_details`` say ``{"type": "completed", "reason": "stop"}`` where GA's are
    null (its ``engine/duplex/realtime_events.py``; docs/fidelity.md, row 15)."""
    response = event.get("response") if event.get("type") == "response.done" else None
    if isinstance(response, dict) and response.get("status") == "completed":
        if response.get("status_details") is None:
            response["status_details"] = {"type": "completed", "reason": "stop"}
    return event


def append_format(ev: dict[str, Any], declared: AudioFormat, native: bool = False) -> AudioFormat:
    """The format of one append: the session's, unless the append names its own
    ``format`` / ``sample_rate_hz`` (as ``DuplexClient`` does on every append). An
    append without a rate is at the session's, as vLLM-Omni reads a native client's
    (``protocol/realtime/audio_input.py``, ``decode_audio_append``); a GA client's
    G.711 at 8 kHz."""
    name, rate = _native_names(ev) if native else (ev.get("format"), ev.get("sample_rate_hz"))
    if name is None and rate is None:
        return declared
    encoding = declared.encoding
    if name is not None:
        found = _APPEND_FORMATS.get(name.lower()) if isinstance(name, str) else None
        if found is None:
            raise AudioError(
                "unsupported_audio_format",
                f"append format {name!r} is not pcm16, pcm_f32le, g711_ulaw or g711_alaw",
            )
        encoding = found
    if rate is None and native:
        return AudioFormat(encoding, declared.rate_hz)
    if rate is None:
        g711_named = encoding in G711_ENCODINGS and declared.encoding not in G711_ENCODINGS
        return AudioFormat(encoding, G711_RATE_HZ if g711_named else declared.rate_hz)
    ok = isinstance(rate, int | float) and not isinstance(rate, bool) and math.isfinite(rate)
    if not ok or int(rate) != rate or not MIN_RATE <= int(rate) <= MAX_RATE:
        raise AudioError(
            "invalid_value", f"append sample_rate_hz must be a whole {MIN_RATE}..{MAX_RATE} Hz"
        )
    return AudioFormat(encoding, int(rate))


def _native_names(ev: dict[str, Any]) -> tuple[Any, Any]:
    """(format, rate) a native append names, where vLLM-Omni looks for them
    (``decode_audio_append``): ``format`` or ``input_audio_format`` (a name or a format
    object), ``sample_rate_hz`` or ``sample_rate`` or the format object's own rate;
    one that is falsy names none."""
    spec = ev.get("format") or ev.get("input_audio_format")
    rate = ev.get("sample_rate_hz") or ev.get("sample_rate") or format_rate(spec)
    # Any spelling vLLM-Omni reads (``audio/pcm16`` too); an object naming no type is
    # no format it takes (``parse_realtime_audio_format`` keeps it whole: refused).
    name = native_name(spec)
    return (spec if isinstance(spec, dict) and name is None else name) or None, rate or None


# The rate vLLM-Omni's runner takes an append without one at (its ``_on_append_audio``).
_RUNNER_RATE = 16_000


def as_upstream_reads(ev: dict[str, Any], declared: AudioFormat) -> dict[str, Any]:
    """A native append as vLLM-Omni reads it, so that a relay hears what its upstream
    hears (``protocol/realtime/audio_input.py``, ``protocol/realtime/audio.py``:
    ``convert_input_audio_with_rate``; ``engine/duplex/session/runner.py``): a falsy
    ``sample_rate_hz`` (or ``sample_rate``) names none (the session's rate), one that
    is no number is taken as 16 kHz (8 kHz for G.711), and PCM16 / G.711 audio is
    decoded leniently
    (stripped, characters outside base64 skipped: ``b64decode(validate=False)``).
    Anything it would refuse is left as it is."""
    out = dict(ev)
    named = out.pop("sample_rate_hz", None), out.pop("sample_rate", None)
    rate = named[0] or named[1]
    try:
        fmt = append_format(out, declared, native=True)
    except AudioError:
        return ev
    if isinstance(rate, int | float) and rate:
        out["sample_rate_hz"] = rate  # a number (or a bool, refused) as it is
    elif rate:  # no number: no rate by the time its runner reads it
        out["sample_rate_hz"] = G711_RATE_HZ if fmt.encoding in G711_ENCODINGS else _RUNNER_RATE
    audio = out.get("audio")
    if isinstance(audio, str) and fmt.encoding != PCM_F32:
        try:
            raw = pybase64.b64decode(audio.strip(), validate=False)
        except (binascii.Error, ValueError):
            return out
        out["audio"] = pybase64.b64encode(raw).decode("ascii")
    return out


@dataclass
class InputRates:
    """The client's audio to the session's 16 kHz timeline, whatever rate each append
    is at: one streaming resampler, replaced (its tail kept) when the rate changes."""

    # Low delay (``shim/resample_low_delay.py``): the VAD, and so barge-in, waits on it.
    _stream: LowDelayResampler = field(default_factory=lambda: LowDelayResampler(24000, VAD_RATE))

    def to_vad_rate(self, samples: Int16Array, rate_hz: int) -> Int16Array:
        if rate_hz == self._stream.in_rate:
            return self._stream.process(samples)
        tail = self._stream.flush()
        self._stream = LowDelayResampler(rate_hz, VAD_RATE)
        out = self._stream.process(samples)
        if not tail.size:
            return out
        return np.concatenate([tail, out]).astype(np.int16, copy=False)
