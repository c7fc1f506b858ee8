"""The state machine behind the shim's stateful properties (tests/test_shim_stateful_*.py),
in both dialects, through ``handle`` only.

A hypothesis state machine plays client, upstream and VAD at once: random
interleavings of client events (session.update, appends of random audio, commit,
clear, response.create/cancel, truncate, playback.ack, unknown types), upstream
events in the session's dialect (created, transcript/audio deltas, done, error,
response lifecycle, losses and resumes), VAD windows and ticks, with time only
moving forward. After every step:

* nothing failed inside ``handle()``: no exception escaped, and no ``internal_error``
  (what ``handle()`` makes of one where it catches it) came out;
* each response id gets at most one ``response.done``, never before its
  ``response.created``; and once the run is wound down (the upstream finishes,
  the user is silent, time passes) every response created got exactly one, and
  nothing for a response comes after its ``response.done``;
* ``conversation.item.truncated`` never cuts beyond the audio sent for that item;
* events for the client carry no ``server_event_seq`` of their own (the edge numbers
  them) and, stamped by the edge's journal (``shim/journal.py``), their seqs rise;
* errors carry a code; a snapshot is JSON and restores.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import orjson
from hypothesis import strategies as st
from hypothesis.stateful import invariant, rule

from shim.audio import b64encode
from shim.inputs import Tick, VadWindow
from tests.shim_machine_driver import ShimDriver
from tests.shim_machine_strategies import (
    PUSH_TO_TALK,
    WINDOW,
    item_refs,
    probs,
    session_updates,
    steps_ms,
)


class ShimMachine(ShimDriver):
    """What both dialects share: the client's rules, the VAD, time, and the invariants."""

    @rule(ms=steps_ms, update=session_updates)
    def client_session_update(self, ms: int, update: dict[str, Any]) -> None:
        self.advance(ms)
        self.client({"type": "session.update", **update})

    @rule(ms=steps_ms)
    def client_push_to_talk(self, ms: int) -> None:
        self.advance(ms)
        self.client({"type": "session.update", **PUSH_TO_TALK})

    @rule(ms=steps_ms, audio_ms=st.integers(0, 300), amplitude=st.integers(0, 20000))
    def client_append(self, ms: int, audio_ms: int, amplitude: int) -> None:
        self.advance(ms)
        fmt = self.session.config.input_format
        n = fmt.rate_hz * audio_ms // 1000
        samples = (np.ones(n) * amplitude).astype("<i2")
        raw = samples.tobytes() if fmt.encoding == "pcm16" else samples.astype("<f4").tobytes()
        self.client({"type": "input_audio_buffer.append", "audio": b64encode(raw)})

    @rule(prob=probs, count=st.integers(1, 16), ms=st.sampled_from([32, 32, 32, 20, 50]))
    def speak(self, prob: float, count: int, ms: int) -> None:
        """``count`` times 32 ms of client audio and the VAD's probability for it, as the
        edge gives them (``ms`` of time passing for each)."""
        fmt = self.session.config.input_format
        n = fmt.rate_hz * 32 // 1000
        samples = (np.ones(n) * (8000 if prob > 0.5 else 10)).astype("<i2")
        if fmt.encoding == "pcm16":
            raw = samples.tobytes()
        else:
            raw = (samples / 32768).astype("<f4").tobytes()
        for _ in range(count):
            self.advance(ms)
            self.client({"type": "input_audio_buffer.append", "audio": b64encode(raw)})
            self.vad_windows(prob, 1)

    @rule(speech=st.integers(6, 30), silence=st.sampled_from([20, 25]) | st.integers(0, 25))
    def user_turn(self, speech: int, silence: int) -> None:
        """A whole utterance: speech windows, then silence (a turn once long enough)."""
        self.speak(0.9, speech, 32)
        if silence:
            self.speak(0.02, silence, 32)

    def vad_windows(self, prob: float, count: int) -> None:
        for _ in range(count):
            if self.vad_end + WINDOW > self.analyzed_end:
                return
            self.vad_end += WINDOW
            self.quiet = self.quiet + 1 if prob < 0.2 else 0
            self.feed(VadWindow(prob, self.vad_end, self.now))

    @rule(ms=st.integers(0, 5000))
    def tick(self, ms: int) -> None:
        self.advance(ms)
        self.feed(Tick(self.now))

    @rule()
    def client_commit(self) -> None:
        self.client({"type": "input_audio_buffer.commit"})

    @rule()
    def client_clear(self) -> None:
        self.client({"type": "input_audio_buffer.clear"})

    @rule()
    def client_response_create(self) -> None:
        self.client({"type": "response.create"})

    @rule(which=st.sampled_from(["current", "other", "none"]))
    def client_response_cancel(self, which: str) -> None:
        event: dict[str, Any] = {"type": "response.cancel"}
        if which == "current" and self.created:
            event["response_id"] = sorted(self.created)[-1]
        elif which == "other":
            event["response_id"] = "resp_other"
        self.client(event)

    def item_ref(self, ref: str) -> dict[str, Any]:
        if ref == "known" and self.items:
            return {"item_id": self.items[-1]}
        if ref == "unknown":
            return {"item_id": "item_unknown"}
        return {}

    @rule(ref=item_refs, end=st.integers(-5, 20000) | st.sampled_from([0, 1]) | st.none())
    def client_truncate(self, ref: str, end: int | None) -> None:
        self.client(
            {"type": "conversation.item.truncate", "content_index": 0, "audio_end_ms": end}
            | self.item_ref(ref)
        )

    @rule(ref=item_refs, played=st.integers(-10, 20000) | st.floats(0, 5000) | st.text(max_size=3))
    def client_playback_ack(self, ref: str, played: Any) -> None:
        self.client({"type": "playback.ack", "played_ms": played} | self.item_ref(ref))

    @rule(
        kind=st.sampled_from(
            [
                "append",
                "retrieve",
                "conversation.item.create",
                "x.unknown",
                "output_audio_buffer.clear",
            ]
        ),
        ref=item_refs,
        junk=st.binary(max_size=9).map(b64encode) | st.just("not base64!") | st.none(),
    )
    def client_noise(self, kind: str, ref: str, junk: str | None) -> None:
        """What the session does not act on, or refuses: junk audio, lookups, other types."""
        if kind == "append":
            self.client({"type": "input_audio_buffer.append", "audio": junk})
        elif kind == "retrieve":
            self.client({"type": "conversation.item.retrieve"} | self.item_ref(ref))
        else:
            self.client({"type": kind, "event_id": "evt_1"})

    @rule()
    def move_to_another_replica(self) -> None:
        """A snapshot is JSON, and a fresh session restored from it carries on."""
        snap = orjson.loads(orjson.dumps(self.session.snapshot()))
        self.session = self.make_session()
        self.restart_vad()
        self.observe(self.session.restore(snap))
        self.after_move()

    def restart_vad(self) -> None:
        """A new replica runs its own VAD stream: its audio time starts again at zero."""
        self.analyzed_end = self.vad_end = 0
        self.overlap = None

    def after_move(self) -> None:
        pass

    # -- invariants
    @invariant()
    def done_only_once_and_after_created(self) -> None:
        assert self.done <= self.created

    def teardown(self) -> None:
        """Wind the run down: the upstream finishes, the user is silent, time passes."""
        if self.stood_down:
            return
        self.wind_down_upstream()
        fmt = self.session.config.input_format
        n = fmt.rate_hz * 32 // 1000
        silent = b64encode(bytes(n * (2 if fmt.encoding == "pcm16" else 4)))
        for _ in range(40):  # 1.28 s of silence, longer than any silence_duration_ms here
            self.advance(32)
            self.client({"type": "input_audio_buffer.append", "audio": silent})
            self.vad_windows(0.0, 1)
        for _ in range(3):
            self.advance(60_000)
            self.feed(Tick(self.now))
        self.wind_down_upstream()
        self.advance(60_000)
        self.feed(Tick(self.now))
        missing = self.created - self.done
        assert not missing, f"responses never ended: {sorted(missing)}"
