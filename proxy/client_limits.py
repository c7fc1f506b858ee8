"""What one client may cost: its audio rate, its idleness, its lifetime, its frame size.

Pure bookkeeping over a clock the caller passes in (seconds, the event loop's); the
client channel (``proxy/client_io.py``) acts on the verdicts: it slows its reading
(the socket then pushes back), warns, or closes (docs/protocol.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from typing import Any

import orjson

from proxy.config import ServerConfig
from shim.audio import PCM16, PCM_F32, PCMA, PCMU, AudioFormat
from shim.audio_formats import SessionConfigError, parse_format
from shim.g711 import G711_RATE_HZ
from shim.native_client import append_format
from shim.native_formats import native_input_rate, native_input_spec, native_name, proxy_spelled

# Audio is counted in time, as the bytes of 24 kHz PCM16 that long: G.711 (8 kHz, a
# byte a sample) in real time costs what 24 kHz PCM16 in real time does, no less.
AUDIO_BYTES_PER_S = 24000 * 2
PCM16_24K = AudioFormat(PCM16, 24000)  # a session's input until it tells another
NATIVE_RATE_HZ = 16000
NATIVE_PCM16 = AudioFormat(PCM16, NATIVE_RATE_HZ)  # a vLLM-Omni session's input
APPEND = "input_audio_buffer.append"

# aiohttp reads a frame whole before the channel sees it: frames up to this many
# times the limit are read and refused with 1009 and a reason (the client, which has
# sent all of it, reads the close); a bigger one is refused by aiohttp from its header,
# before any of it is buffered (still 1009, but the client, still sending, may see its
# socket reset first). Every connection may hold this much at once, so it is small.
READ_CAP_FACTOR = 2


def read_cap(max_frame_bytes: int) -> int:
    """The ``max_msg_size`` to read client frames with."""
    return max_frame_bytes * READ_CAP_FACTOR


def audio_bytes(event: dict[str, Any]) -> int:
    """The decoded size of an append's audio (base64: 3 bytes per 4 characters)."""
    if event.get("type") != APPEND:
        return 0
    audio = event.get("audio")
    if not isinstance(audio, str):
        return 0
    padding = len(audio[-2:]) - len(audio[-2:].rstrip("="))
    return max(0, len(audio) * 3 // 4 - padding)


# The session events that tell a client the session it has.
TOLD = ("session.created", "session.updated", "session.resumed")
# A frame's own ``type`` comes first (vLLM-Omni's events, GA's, the proxy's): only a
# frame whose first characters name a session event is parsed, whatever its size (it
# is bounded by ``max_frame_bytes``), so an audio frame costs a look at its start.
TOLD_TYPE_WITHIN = 256
_TOLD_TYPE = re.compile(r'"type"\s*:\s*"session\.(?:created|updated|resumed)"')


def told_input_format(
    session: Any, native: bool = False, current: AudioFormat | None = None
) -> AudioFormat | None:
    """The input format a session object tells; None if it names none. A native
    client's is read as vLLM-Omni reads it (``_native_told``); a GA client's from GA's
    ``audio.input.format``, else the beta API's flat ``input_audio_format`` (24 kHz PCM16,
    8 kHz G.711 unless a rate is named), under any spelling ``shim/native_formats.py``
    knows."""
    if not isinstance(session, dict):
        return None
    if native:
        return _native_told(session, current or NATIVE_PCM16)
    audio = session.get("audio")
    a_in = audio.get("input") if isinstance(audio, dict) else None
    spec = a_in.get("format") if isinstance(a_in, dict) else None
    if spec is not None:
        try:
            # A G.711 object naming a rate (a vLLM-Omni upstream's) is at that rate.
            told = proxy_spelled(spec)
            return parse_format(told, None, "session", allow_f32=True, g711_rate=G711_RATE_HZ)
        except SessionConfigError:
            pass  # its flat name, as the beta API tells it
    flat = session.get("input_audio_format")
    if flat is None:
        return None
    rate = native_input_rate(session)  # a rate the object names, if any
    rate = rate if isinstance(rate, int) and not isinstance(rate, bool) else None
    return parse_format(proxy_spelled(flat), rate, "session", allow_f32=True, g711_rate=rate)


_NATIVE_ENCODINGS = {"pcm16": PCM16, "pcm_f32le": PCM_F32, "g711_ulaw": PCMU, "g711_alaw": PCMA}


def _native_told(session: dict[str, Any], current: AudioFormat) -> AudioFormat | None:
    """The input format as vLLM-Omni reads a session object (its
    ``apply_realtime_session_defaults``): the flat name before ``audio.input.format``,
    the flat rate before ``audio.input``'s and the format's own. What it does not
    apply (an unknown name, a rate like ``"16k"``) leaves that part as it was."""
    spec, rate = native_input_spec(session), native_input_rate(session)
    if spec is None and rate is None:
        return None
    encoding = _NATIVE_ENCODINGS.get(str(native_name(spec)), current.encoding)
    if not isinstance(rate, int) or isinstance(rate, bool) or rate <= 0:
        rate = current.rate_hz
    return AudioFormat(encoding, rate)


# The keys an append may name its own format with, in either client's reading
# (``shim/native_client.py``'s ``append_format``): without them, it is the session's.
_NAMES_FORMAT = frozenset(("format", "input_audio_format", "sample_rate_hz", "sample_rate"))


class InputClock:
    """How much audio time an append holds, as 24 kHz PCM16 bytes: its bytes at the
    format the append names itself, else at the input format the session last told the
    client it has (its ``session.created`` / ``session.updated``, ``accepted``). The
    client's own ``session.update`` counts for nothing here: only the session knows
    what of it applies."""

    def __init__(self, native: bool = False) -> None:
        self.input_format = PCM16_24K
        self._per_s_of: AudioFormat | None = None
        self._per_s = 1
        self.native = False
        self.for_client(native)

    def for_client(self, native: bool) -> None:
        """Whose clock this is: a vLLM-Omni-native client's session objects are read
        in vLLM-Omni's order, its session is 16 kHz until told otherwise, and an append
        without a rate is at the session's, G.711 too (``append_format``)."""
        if native and not self.native and self.input_format == PCM16_24K:
            self.input_format = NATIVE_PCM16
        self.native = native

    def accepted(self, session: Any) -> None:
        """The session object the client was told; one naming no readable format
        leaves the format as it was (this runs in the edge: it never raises)."""
        try:
            fmt = told_input_format(session, self.native, self.input_format)
        except Exception:  # unreadable: the format stays
            return
        if fmt is not None:
            self.input_format = fmt

    def told(self, text: str) -> None:
        """A frame the client was sent as it is (passthrough): ``accepted`` if it is a
        session event, as its ``type`` near the start says (an audio frame is passed
        over by a look for the name's start, cheaper than the pattern's)."""
        if text.find('"session.', 0, TOLD_TYPE_WITHIN) < 0:
            return
        if _TOLD_TYPE.search(text, 0, TOLD_TYPE_WITHIN) is None:
            return
        try:
            event = orjson.loads(text)
        except orjson.JSONDecodeError:
            return
        if isinstance(event, dict) and event.get("type") in TOLD:
            self.accepted(event.get("session"))

    def cost(self, event: dict[str, Any]) -> int:
        # audio_bytes, inline (a call fewer on every client frame's path)
        if event.get("type") != APPEND:
            return 0
        audio = event.get("audio")
        if not isinstance(audio, str):
            return 0
        n_bytes = len(audio) * 3 // 4 - (2 if audio.endswith("==") else audio.endswith("="))
        if n_bytes <= 0:
            return 0
        fmt = self.input_format
        if _NAMES_FORMAT.isdisjoint(event):  # the session's (append_format)
            if fmt is not self._per_s_of:  # (a frozen format: its bytes a second kept)
                self._per_s_of, self._per_s = fmt, fmt.rate_hz * fmt.bytes_per_sample
            per_s = self._per_s
        else:
            try:
                fmt = append_format(event, fmt, self.native)
            except Exception:  # refused by the session anyway
                return n_bytes  # counted as it came
            per_s = fmt.rate_hz * fmt.bytes_per_sample
        return -(-n_bytes * AUDIO_BYTES_PER_S // per_s)


class Rate(Enum):
    OK = "ok"
    WARN = "warn"  # first frame over the allowance: tell the client, then slow down
    SLOW = "slow"  # still over it: slow down
    CLOSE = "close"  # over it for longer than the grace


@dataclass
class Verdict:
    rate: Rate
    wait_s: float = 0.0


class InputRate:
    """A token bucket over the client's audio: ``factor`` times real time, plus a burst."""

    def __init__(self, factor: float, burst_s: float, grace_s: float, now: float) -> None:
        self.rate = factor * AUDIO_BYTES_PER_S
        self.burst = burst_s * AUDIO_BYTES_PER_S
        self.grace_s = grace_s
        self.tokens = self.burst
        self.last = now
        self.over_since: float | None = None
        self.clock = InputClock()

    def cost(self, event: dict[str, Any]) -> int:
        """What a client event costs of the allowance (``InputClock``)."""
        return self.clock.cost(event)

    @classmethod
    def from_config(cls, cfg: ServerConfig, now: float) -> InputRate:
        return cls(cfg.input_realtime_factor, cfg.input_burst_s, cfg.input_rate_grace_s, now)

    def _refilled(self, now: float) -> float:
        """The allowance at ``now``: what was left, refilled at the rate, up to the burst."""
        return min(self.burst, self.tokens + (now - self.last) * self.rate)

    def take(self, event: dict[str, Any], now: float) -> bool:
        """``charge`` of the event's ``cost`` if it fits (True), in one call: a client
        frame's path; False, and nothing charged, if not (``charge`` says what then)."""
        n_bytes = self.clock.cost(event)
        tokens = self.tokens + (now - self.last) * self.rate
        if tokens > self.burst:
            tokens = self.burst
        if n_bytes > 0:
            tokens -= n_bytes
            if tokens < 0:
                return False
            self.over_since = None
        self.tokens, self.last = tokens, now
        return True

    def charge(self, n_bytes: int, now: float) -> Verdict:
        self.tokens = self._refilled(now)
        self.last = now
        if n_bytes <= 0:
            return Verdict(Rate.OK)
        self.tokens -= n_bytes
        if self.tokens >= 0:
            self.over_since = None
            return Verdict(Rate.OK)
        wait = -self.tokens / self.rate
        if self.over_since is None:
            self.over_since = now
            return Verdict(Rate.WARN, wait)
        if now - self.over_since > self.grace_s:
            return Verdict(Rate.CLOSE)
        return Verdict(Rate.SLOW, wait)


class Lifetime:
    """When an idle client is warned and closed, and when the session must end."""

    def __init__(self, cfg: ServerConfig, now: float) -> None:
        self.idle_s = cfg.idle_timeout_s
        self.warn_s = min(cfg.idle_warning_s, cfg.idle_timeout_s)
        self.last_input = now
        self.warned = False
        # The session's own end; a resumed session keeps its first deadline.
        self.ends_at = now + cfg.max_session_s

    def heard(self, now: float) -> None:
        self.last_input = now
        self.warned = False

    def idle_close_at(self) -> float:
        return self.last_input + self.idle_s

    def next_check(self) -> float:
        """The next moment something may be due (a warning, an idle close, the end)."""
        due = self.idle_close_at()
        if not self.warned:
            due -= self.warn_s
        return min(due, self.ends_at)
