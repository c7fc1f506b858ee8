"""Client events both emulated modes interpret the same way.

Each takes the session, seen as ``ClientEventHost`` (only what the handlers need
of it), and the event; a dialect puts them in its dispatch table, wrapped where it
does more (the relay also forwards most of them upstream).
"""

from __future__ import annotations

import math
from collections.abc import Container
from typing import Any, Protocol

import numpy as np

from shim import native_truncate, wire
from shim.actions import Action, AnalyzeAudio, SendClient
from shim.audio import AudioError, b64decode, decode_samples
from shim.echo import EchoSuppressor
from shim.input_history import InputHistory
from shim.native_client import InputRates, append_format, as_upstream_reads
from shim.output import ActiveResponse
from shim.overlap_evidence import OverlapEvidence
from shim.playback import ItemPlayback, PlaybackLedger
from shim.session_config import ClientSessionConfig
from shim.settings import VAD_RATE, ShimSettings
from shim.turns import Turns
from shim.vad_timeline import VadTimeline

# 1 / 32768, a power of two: multiplying by it rounds as dividing by 32768 does (the
# same float32 for every int16), in one ufunc call with no scalar conversion.
_INT16_SCALE = np.float32(1 / 32768)


class ClientEventHost(Protocol):
    """What these handlers need from the session (``shim/session.py``)."""

    config: ClientSessionConfig
    settings: ShimSettings
    history: InputHistory
    ledger: PlaybackLedger
    turns: Turns
    vad_enabled: bool
    echo: EchoSuppressor | None
    evidence: OverlapEvidence
    rates: InputRates
    vad_timeline: VadTimeline

    @property
    def response(self) -> ActiveResponse | None: ...

    def err(
        self, code: str, message: str, ev: dict[str, Any] | None = None, param: str | None = None
    ) -> SendClient: ...

    def cancel_response(
        self, now: float, reason: str, truncate_at: int | None = None
    ) -> list[Action]: ...


def is_refusal(actions: list[Action]) -> bool:
    """The handler answered with an ``error``: nothing else is to be done."""
    return any(isinstance(a, SendClient) and a.event.get("type") == "error" for a in actions)


def input_audio(
    s: ClientEventHost, ev: dict[str, Any], now: float, as_read: bool = False
) -> list[Action]:
    """``input_audio_buffer.append``: kept for turns and, echo removed, sent to the VAD.

    An append may name its own ``format`` and ``sample_rate_hz`` (vLLM-Omni's clients
    tag every one): it is read that way and resampled to the 16 kHz timeline. A native
    client's is read as vLLM-Omni reads it (``native_client.as_upstream_reads``), unless
    the caller did (``as_read``).
    """
    if s.config.native and not as_read:
        ev = as_upstream_reads(ev, s.config.input_format)
    audio = ev.get("audio", ev.get("delta"))
    if not isinstance(audio, str):
        return [
            s.err(
                "invalid_event",
                "input_audio_buffer.append needs a base64 'audio' string",
                ev,
                "audio",
            )
        ]
    try:
        fmt = append_format(ev, s.config.input_format, s.config.native)
        samples = decode_samples(b64decode(audio), fmt)
    except AudioError as exc:
        return [s.err(exc.code, str(exc), ev, "audio")]
    if samples.size == 0:
        return [s.err("invalid_audio", "input_audio_buffer.append carries no audio", ev, "audio")]
    s16 = s.rates.to_vad_rate(samples, fmt.rate_hz)
    if not s16.size:
        return []
    keep_ms = s.settings.max_turn_ms
    # Between VAD turns only prefix padding is needed, before what the VAD has still to
    # judge (a client sending faster than real time is ahead of it by that much: a turn
    # it finds there begins that far back); push-to-talk (no VAD) keeps the whole
    # buffer for the client's commit.
    if not s.turns.in_progress and s.config.turn.vad is not None:
        between_ms = s.settings.vad.prefix_padding_ms + 3000
        behind_ms = s.vad_timeline.unjudged * 1000 // VAD_RATE
        keep_ms = max(between_ms, min(between_ms + behind_ms, keep_ms))  # a turn at most
    start = s.history.append(s16, keep_ms)
    if s.echo is not None:
        s.echo.far.clock.heard(s.history.end, now)
    if not s.vad_enabled or s.config.turn.vad is None:
        return []
    # Scaled once here for the echo suppressor and the overlap evidence, both of which read it.
    mic = np.multiply(s16, _INT16_SCALE, dtype=np.float32)  # ``s16 / 32768`` as float32
    clean = s.echo.process_scaled(mic, start) if s.echo is not None else mic
    s.evidence.add_scaled(mic, clean, start)
    s.vad_timeline.given(start, clean.size)
    return [AnalyzeAudio(samples=clean, start_sample=start)]


# An ack's position beyond this (ms, over 285,000 years) is no playback position: it is
# refused, never kept, relayed or told back (past 2^64 it could not even be written as
# a JSON integer again).
MAX_ACK_MS = 2**53


def ack_out_of_range(s: ClientEventHost, ev: dict[str, Any]) -> list[Action] | None:
    """The refusal of an ack whose ``played_ms`` or ``committed_ms`` no playback reaches."""
    for key in ("played_ms", "committed_ms"):
        value = ev.get(key)
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        if not (math.isfinite(value) and abs(value) <= MAX_ACK_MS):
            return [s.err("invalid_value", f"playback.ack {key} is out of range", ev, key)]
    return None


def playback_ack(s: ClientEventHost, ev: dict[str, Any], now: float) -> list[Action]:
    played = ev.get("played_ms")
    if isinstance(played, bool) or not isinstance(played, int | float):
        return [s.err("invalid_event", "playback.ack requires numeric played_ms", ev, "played_ms")]
    far = ack_out_of_range(s, ev)
    if far is not None:
        return far
    item = item_for(s, ev)
    if item is not None:
        item.ack(float(played))
    return []


def item_for(s: ClientEventHost, ev: dict[str, Any]) -> ItemPlayback | None:
    """The assistant item a ``playback.ack`` is about: by item id, else the latest of
    its response (or of any)."""
    item_id = ev.get("item_id")
    if isinstance(item_id, str):
        return s.ledger.get(item_id)
    rid = ev.get("response_id")
    for item in reversed(s.ledger.items()):
        if rid is None or item.response_id == rid:
            return item
    return None


def truncate(
    s: ClientEventHost, ev: dict[str, Any], now: float, others: Container[str] = ()
) -> list[Action]:
    """``others``: the items besides the assistant's the session knows of (the client
    is told such an item is not the assistant's, not that it does not exist)."""
    read = _read_native(s, ev, others) if s.config.native else _read_ga(s, ev, others)
    if isinstance(read, SendClient):
        return [read]
    item, end = read
    if s.config.native:
        beyond = native_truncate.past_the_audio(end, item.sent_ms)
        if beyond is not None:
            return [s.err(*beyond, ev)]
    left = item.truncated_ms if item.told_by is not None else None
    if left is not None and end >= left and item.told_by == "proxy" and not s.config.native:
        # A cut the proxy made and told (a barge-in) is where a GA client's own
        # truncate, sent as it stopped playing, lands: that truncation was told
        # (``conversation.item.truncated``), once; an earlier end is a new one.
        return []
    if left is not None and end > left:
        # GA: past the item's audio is an error, and a truncated item's audio ends
        # where it was cut; it never grows back. A cut the proxy made and told (a
        # barge-in) is where a native client's own truncate, sent as it stopped
        # playing, lands anyway: it is told again, unchanged (vLLM-Omni answers each).
        if item.told_by == "proxy":
            return [SendClient(wire.truncated(item.item_id, left))]
        msg = f"audio_end_ms {end} is beyond the {left} ms left after the item's truncation"
        return [s.err("invalid_value", msg, ev, "audio_end_ms")]
    if not s.config.native and end > item.sent_ms + 0.5:
        return [
            s.err(
                "invalid_value",
                f"audio_end_ms {end} is beyond the {int(item.sent_ms)} ms of audio sent",
                ev,
                "audio_end_ms",
            )
        ]
    item.truncated_ms, item.told_by = end, "client"
    resp = s.response
    if resp is not None and resp.live and resp.item_id == item.item_id:
        # Truncating the item still being produced ends its response too.
        out = s.cancel_response(now, reason="client_cancelled", truncate_at=end)
        item.told_by = "client"
        return out
    return [SendClient(wire.truncated(item.item_id, end))]


def _read_ga(
    s: ClientEventHost, ev: dict[str, Any], others: Container[str]
) -> SendClient | tuple[ItemPlayback, int]:
    """A GA client's truncate, checked in GA's terms: an integer, not negative
    (``invalid_value`` naming it), of the item's audio part, of an item there is, the
    assistant's (one of ``others`` in OpenAI's words for it, in GA's code)."""
    item_id, end = ev.get("item_id"), ev.get("audio_end_ms")
    if not isinstance(item_id, str):
        return s.err("invalid_event", "conversation.item.truncate needs item_id", ev, "item_id")
    if isinstance(end, bool) or not isinstance(end, int):
        return s.err("invalid_event", "audio_end_ms must be an integer", ev, "audio_end_ms")
    if end < 0:  # a number out of range: GA's invalid_value, naming it
        msg = f"audio_end_ms must be at least 0, not {end}"
        return s.err("invalid_value", msg, ev, "audio_end_ms")
    index = ev.get("content_index", 0)
    if isinstance(index, bool) or index != 0:
        # An assistant item's audio is its only content part, at index 0 (GA says so).
        msg = f"content_index {index!r} is not the item's audio part (0)"
        return s.err("invalid_value", msg, ev, "content_index")
    item = s.ledger.get(item_id)
    if item is None:
        code, words = wire.unknown_item("conversation.item.truncate", item_id)
        return s.err(code, wire.NOT_ASSISTANT_AUDIO if item_id in others else words, ev, "item_id")
    return item, end


def _read_native(
    s: ClientEventHost, ev: dict[str, Any], others: Container[str]
) -> SendClient | tuple[ItemPlayback, int]:
    """A native client's, in vLLM-Omni's order and words (``shim/native_truncate.py``)."""
    read = native_truncate.read(ev, s.ledger, others)
    if isinstance(read, tuple):
        return s.err(*read, ev)
    if read.content_index != 0:
        # The proxy's items carry their audio as their one content part.
        msg = f"conversation.item.truncate content_index out of range: {read.content_index}"
        return s.err("bad_event", msg, ev)
    item = s.ledger.get(read.item_id)
    assert item is not None  # read found it
    return item, read.audio_end_ms


def retrieve(s: ClientEventHost, ev: dict[str, Any]) -> list[Action] | None:
    """Assistant items the proxy played out are answered here, as heard; None for
    any other item."""
    item_id = ev.get("item_id")
    item = s.ledger.get(item_id) if isinstance(item_id, str) else None
    if item is None:
        return None
    cut = item.truncated_ms
    transcript = item.transcript if cut is None else item.heard_transcript(float(cut))
    status = "completed" if cut is None else "incomplete"
    return [
        SendClient(
            {
                "type": "conversation.item.retrieved",
                "item": wire.assistant_item(item.item_id, status, transcript),
            }
        )
    ]
