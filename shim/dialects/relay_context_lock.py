"""Whether a duplex upstream session has fixed its instructions (``ga_instructions.py``)
or its voice (``ga_voice.py``), for the GA relay, as vLLM-Omni 0.30.0 fixes them.

Its runner locks a session's context at the first append of input its model accepts
(``engine/duplex/session/append_task.py``, ``_submit``: ``context_locked``), and an
append reaches the model only when it takes a turn (``engine/duplex/session/
runner.py``): a commit or ``response.create`` that starts an answer from committed
audio (``_flush_and_submit_committed_turn``, ``_start_response_from_committed_audio``),
a turn of user text items on a model that takes one (``supports_text_only_turn``), or,
in a session with ``extra_body.auto_response``, the first whole ``chunk_period_ms`` of
audio buffered since the last commit or clear (``_on_append_audio``: ``allow_emit``).
Audio only buffered, a commit asking no answer, an item with no answer and a
``response.create`` refused for want of input lock nothing. A session that does not
auto-respond never buffers an append its envelope reads as silence (its rms under
``overlap_silence_rms``, 0.003: ``protocol/realtime/audio_input.py``,
``input_looks_like_speech``), so a commit or ``response.create`` over silence alone finds
no input (``input_audio_buffer_empty``, ``response_create_without_input``). The user
items a turn may answer include the ``initial_user_text`` the session opened with
(``engine/duplex/session/engine_session.py``, ``__post_init__``:
``notify_new_user_item``); an update leaves it (``engine/duplex/config.py``).

The proxy counts what it sends: a turn it asks for locks the session when it goes,
not when the upstream's ``response.created`` comes back, so an update the client sends
just after is judged as the upstream will judge it. Every ``response.created`` of the
upstream's (its server VAD answering a turn) locks it too, and an
``input_audio_buffer.committed`` leaves audio for a ``response.create`` to answer.

The voice is refused while the playback of the session's current response has audio
(``engine/duplex/session/control.py``: ``audio_started``, ``session.playback``'s
``generated_ms`` or ``sent_ms``), and that playback is a fresh one, with none, for each
response it begins (``engine/duplex/session/engine_session.py``, ``begin_response``)
and after a cut (``clear_playback_cursor``: an ``output_audio_buffer.clear``, or a
``response.cancel`` of a response in progress, ``engine/duplex/session/runner.py``
``_on_cancel``), the upstream's own too (its server VAD's barge-in, ``runner.py``
``_barge_in_for_overlap``: ``helpers.py``, ``advance_barge_in_epoch``). Every cut of
an answer in progress ends it with a ``response.done`` cancelled, and one of an answer
generated but still playing is told as its ``output_audio_buffer.cleared``
(``engine/duplex/realtime_events.py``, ``audio.cancelled``). So it is fixed from the
upstream's first audio of a response until its next ``response.created`` or a cut,
the proxy's or the upstream's. Only audio of the last ``response.created`` counts: a
model that overlaps turns (``supports_concurrent_turn_requests``, aura_omni) drains an
answer's speech while the next one begins, and vLLM-Omni puts that audio on the
replaced answer's own playback (``engine_session.py``, ``_mark_draining_audio_sent``).
A clear or cancel naming an answer other than the last one cuts nothing: a clear of an
answer done while a newer one is active is only answered
(``engine/duplex/realtime_events.py``, ``resolve_clear_output_audio``), a cancel of
one not active is refused (``response_not_active``); either leaves the voice fixed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from shim.audio import PCM_F32, AudioFormat
from shim.realtime_items import image_refusal, normalized

# engine/duplex/config.py (realtime_item_to_history_message): the parts of a message
# it keeps, so a user item it counts for a text-only turn.
_TEXT = frozenset({"input_text", "text", "output_text", "audio_transcript", "transcript"})
_AUDIO = frozenset({"input_audio", "audio"})
SILENCE_RMS = 0.003  # protocol/realtime/session.py: overlap_silence_rms, its default
INTAKE = "upstream_intake"  # the snapshot's key (relay_upstream_audio.py, wire)
_SQUARE_SCALE = 2.0**-30  # (1 / 32768)²
_EXACT_BYTES = 2 * 2**23  # PCM16 appends under 2²³ samples: _pcm16_rms


def speech(raw: bytes, fmt: AudioFormat, silence_rms: float = SILENCE_RMS) -> bool:
    """Whether vLLM-Omni reads an append of ``raw`` (PCM16 or float, as it goes
    upstream) as more than silence: its rms, samples in [-1, 1], at least
    ``silence_rms`` (the envelope's at its 16 kHz; the level is the same at any rate)."""
    if fmt.encoding == PCM_F32:
        if len(raw) < 4 or len(raw) % 4:
            return True
        samples = np.frombuffer(raw, dtype="<f4").astype(np.float64)
    else:
        if len(raw) < 2 or len(raw) % 2:
            return True
        if len(raw) < _EXACT_BYTES:
            return _pcm16_rms(raw) >= silence_rms
        samples = np.frombuffer(raw, dtype="<i2").astype(np.float64) / 32768.0
    return float(np.sqrt(np.mean(np.square(samples)))) >= silence_rms


def _pcm16_rms(raw: bytes) -> float:
    """``sqrt(mean(square(samples / 32768)))`` in float64, bit for bit, for fewer than
    2²³ samples: each (s / 32768)² is s² · 2⁻³⁰ exactly, and every partial sum of them is
    a whole multiple of 2⁻³⁰ below 2⁵³ of them, so numpy's float sum is exact in any
    order; the integers' sum of squares is that sum, and the one division and the square
    root are the same. A third of the float path's cost, at every append read while the
    context is still open (until the upstream session's first turn)."""
    pcm = np.frombuffer(raw, dtype="<i2").astype(np.int64)
    return math.sqrt(int(pcm @ pcm) * _SQUARE_SCALE / pcm.size)


def user_item(item: Any, images: bool = False) -> bool:
    """A user message vLLM-Omni keeps in its history: some text, an image or audio,
    as it reads the item (``shim/realtime_items.py``: no role is the user's, content
    not a list is none), on a model that takes images (``images``) or not."""
    if not isinstance(item, Mapping):
        return False
    item = normalized(item)
    if item.get("role") != "user" or image_refusal(item, images) is not None:
        return False
    parts = [p for p in item["content"] if isinstance(p, Mapping)]
    text = "".join(
        p["text"] for p in parts if p.get("type") in _TEXT and isinstance(p.get("text"), str)
    )
    media = any(
        (p.get("type") == "input_image" and isinstance(p.get("image_url"), str))
        or (p.get("type") in _AUDIO and isinstance(p.get("audio") or p.get("data"), str))
        for p in parts
    )
    return bool(text.strip()) or media


_CLEAR = "output_audio_buffer.clear"
_CUTS = frozenset({_CLEAR, "response.cancel"})


def _id(response: Any) -> str | None:
    rid = response.get("id") if isinstance(response, Mapping) else None
    return rid if isinstance(rid, str) and rid else None


class ContextLock:
    """One upstream session's intake, as far as it decides the lock."""

    __slots__ = (
        "auto",
        "buffered_ms",
        "chunk_ms",
        "committed",
        "current",
        "images",
        "items",
        "live",
        "locked",
        "route_seed",
        "seed",
        "spoke",
        "text_turns",
    )

    def __init__(self, caps: Mapping[str, Any], auto: bool = False, seed: str = "") -> None:
        chunk = caps.get("chunk_period_ms")
        self.chunk_ms = chunk if isinstance(chunk, int | float) and chunk > 0 else 1000
        self.text_turns = caps.get("supports_text_only_turn") is True
        self.images = caps.get("supports_image_input") is True
        self.auto = auto  # the session's extra_body.auto_response
        self.locked = False
        self.buffered_ms = 0.0  # audio sent since the last commit or clear
        self.committed = False  # committed audio no answer has taken yet
        self.seed = seed  # the session's initial_user_text: a user item at the opening
        self.route_seed = seed  # the route's: what a fresh session after a loss opens with
        self.items = 1 if seed else 0  # user items no turn has taken yet
        self.spoke = False  # the current response's playback has audio: the voice is fixed
        self.live = False  # a response in progress (a response.cancel cuts it)
        self.current: str | None = None  # the last response.created's (None: not known)

    def fresh(self) -> ContextLock:
        """The intake of a fresh session of the same upstream, opened with the route's
        settings alone (``proxy/emulated/upstream_dial.py``): its seed is the route's,
        the client's kept settings following as an update that leaves it."""
        return ContextLock(
            {
                "chunk_period_ms": self.chunk_ms,
                "supports_text_only_turn": self.text_turns,
                "supports_image_input": self.images,
            },
            self.auto,
            self.route_seed,
        )

    def seeded(self, text: str, client: bool = False) -> None:
        """The ``initial_user_text`` the session opens with, a user item: the client's
        opening states it over the route's (``""``: none), one item either way."""
        self.items = max(0, self.items - bool(self.seed)) + bool(text)
        self.seed = text
        if not client:
            self.route_seed = text

    def appended(self, ms: float, speech: bool = True) -> None:
        """An append sent; ``speech``: not silence, or a session that does not
        auto-respond drops it (``engine/duplex/session/runner.py``, ``_on_append_audio``)."""
        if not (self.auto or speech):
            return
        self.buffered_ms += ms
        if self.auto and self.buffered_ms >= self.chunk_ms:
            self.locked = True

    def sent(self, kind: Any, event: Mapping[str, Any] | None) -> None:
        """A client event relayed (``event``: its object, if it was read)."""
        if kind == "input_audio_buffer.commit":
            asks = event is not None and event.get("response_create") is True
            if self.buffered_ms > 0:
                self.committed = True
                self._turn(asks or self.auto)
            self.buffered_ms = 0.0
        elif kind == "input_audio_buffer.clear":
            self.buffered_ms = 0.0
        elif kind == "conversation.item.create" and event is not None:
            self.items += user_item(event.get("item"), self.images)
        elif kind == "response.create":
            self._turn(self.committed or (self.items > 0 and self.text_turns))
            self.items = 0
        elif kind in _CUTS and (self.live or kind == _CLEAR):
            # One naming an answer a newer one replaced cuts nothing (cleared, or
            # response_not_active); one naming none is the current answer's.
            if self._current(event.get("response_id") if event is not None else None):
                self.spoke = self.live = False

    def heard(self, event: Mapping[str, Any]) -> None:
        """An event of the upstream's."""
        kind = event.get("type")
        if kind == "response.created":
            self._turn(True)
            self.spoke, self.live = False, True
            self.current = _id(event.get("response"))
        elif kind == "response.output_audio.delta":
            self.spoke = self.spoke or self._current(event.get("response_id"))
        elif kind == "response.done":
            self.live = self.live and not self._current(_id(event.get("response")))
            status = event.get("response")
            if isinstance(status, Mapping) and status.get("status") == "cancelled":
                self.spoke = False  # every cut of vLLM-Omni's clears the cursor
        elif kind == "output_audio_buffer.cleared" and self._current(event.get("response_id")):
            self.spoke = False  # the current answer's playback cut once it was generated
        elif kind == "input_audio_buffer.committed":
            self.committed, self.buffered_ms = True, 0.0

    def _current(self, rid: Any) -> bool:
        """``rid`` (a response id, or none) may be the current response's."""
        rid = rid if isinstance(rid, str) and rid else None
        return rid is None or self.current is None or rid == self.current

    def _turn(self, taken: bool) -> None:
        if taken:
            self.locked, self.committed = True, False

    def wire(self) -> dict[str, Any]:
        """What decides the lock from here on, for a snapshot."""
        return {
            "auto": self.auto,
            "buffered_ms": self.buffered_ms,
            "committed": self.committed,
            "items": self.items,
            "live": self.live,
            "current": self.current,
        }

    def load(self, intake: Any) -> None:
        """A snapshot's ``wire()``; one taken before it was kept (none) changes nothing."""
        if not isinstance(intake, Mapping):
            return
        auto, ms, items = intake.get("auto"), intake.get("buffered_ms"), intake.get("items")
        if isinstance(auto, bool):
            self.auto = auto
        if isinstance(ms, int | float) and not isinstance(ms, bool) and ms >= 0:
            self.buffered_ms = float(ms)
        if isinstance(items, int) and not isinstance(items, bool) and items >= 0:
            self.items = items
        self.committed = intake.get("committed") is True
        self.live = intake.get("live") is True
        current = intake.get("current")
        self.current = current if isinstance(current, str) and current else None
