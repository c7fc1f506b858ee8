"""Stateful properties of the emulated session, in both dialects, through ``handle`` only.

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

import os
from typing import Any

import numpy as np
import orjson
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from shim.actions import (
    AbortUpstream,
    Action,
    AnalyzeAudio,
    ResumeUpstream,
    SendClient,
    SendClientAudio,
    SendUpstream,
    StandDown,
)
from shim.audio import b64encode
from shim.dialects.duplex_relay import BargeInRelaySession
from shim.dialects.turn_based import TurnBasedSession
from shim.inputs import (
    ClientEvent,
    Input,
    Tick,
    UpstreamCheckpointed,
    UpstreamEvent,
    UpstreamLost,
    UpstreamReattached,
    VadWindow,
)
from shim.journal import Journal
from shim.session import EmulatedSession, ShimSettings
from shim.vad_gate import VadParams

# Bounded for every run (seconds), and the same examples every run, so CI never flakes.
# A hunt explores afresh: HYPOTHESIS_HUNT=1 (or STATEFUL_EXAMPLES=2000 STATEFUL_STEPS=150),
# with -o timeout=0, and NOSHRINK=1 to see failures without waiting for shrinking.
RUNS = settings(
    derandomize=not {"STATEFUL_EXAMPLES", "HYPOTHESIS_HUNT"} & set(os.environ),
    phases=[Phase.explicit, Phase.reuse, Phase.generate]
    if os.environ.get("NOSHRINK")
    else list(Phase),
    max_examples=int(os.environ.get("STATEFUL_EXAMPLES", "150")),
    stateful_step_count=int(os.environ.get("STATEFUL_STEPS", "50")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
WINDOW = 512  # 16 kHz samples per VAD window (32 ms)
SID = "sess_0123456789abcdef"

probs = st.sampled_from([0.0, 0.05, 0.3, 0.45, 0.55, 0.9, 1.0]) | st.floats(0.0, 1.0)
steps_ms = st.sampled_from([0, 5, 20, 100]) | st.integers(0, 400)
item_refs = st.sampled_from(["known", "unknown", "missing"])


def pcm(ms: int, rate: int, amplitude: int = 3000) -> str:
    n = rate * ms // 1000
    t = np.arange(n) / rate
    return b64encode((np.sin(2 * np.pi * 220 * t) * amplitude).astype("<i2").tobytes())


session_updates = st.sampled_from(
    [
        {"session": {"instructions": "be brief"}},
        {"session": {"audio": {"input": {"turn_detection": {"type": "server_vad"}}}}},
        {
            "session": {
                "audio": {
                    "input": {
                        "turn_detection": {
                            "type": "server_vad",
                            "silence_duration_ms": 200,
                            "create_response": False,
                        }
                    }
                }
            }
        },
        {"session": {"audio": {"input": {"turn_detection": {"interrupt_response": False}}}}},
        {"session": {"audio": {"input": {"format": {"type": "audio/pcm", "rate": 16000}}}}},
        {"session": {"audio": {"output": {"format": {"type": "audio/pcm", "rate": 16000}}}}},
        {"session": {"audio": {"input": {"format": {"type": "pcm_f32le", "rate": 24000}}}}},
        {"session": {"audio": {"input": {"format": {"type": "audio/pcm", "rate": 24000}}}}},
        {"session": {"audio": {"input": {"format": {"type": "audio/x", "rate": 1}}}}},
        {"session": {"turn_detection": {"threshold": 2}}},
    ]
)


PUSH_TO_TALK = {"session": {"audio": {"input": {"turn_detection": None}}}}
# Windows of low speech probability in a row after which no user speech can still be
# under way (longer than any silence_duration_ms the updates above set).
QUIET_WINDOWS = 40


class ShimMachine(RuleBasedStateMachine):
    """What both dialects share: the client, the VAD, time, and the invariants."""

    def __init__(self) -> None:
        super().__init__()
        self.now = 0.0
        self.journal = Journal("t", max_bytes=1 << 30, max_age_ms=1e12)
        self.last_seq = 0
        self.created: set[str] = set()
        self.done: set[str] = set()
        self.sent_ms: dict[str, float] = {}
        self.items: list[str] = []
        self.analyzed_end = 0  # 16 kHz samples the VAD could have seen
        self.vad_end = 0
        self.quiet = QUIET_WINDOWS
        # The proxy's own speech_started not yet followed by its speech_stopped or a cut:
        # user speech over the assistant may be undecided (output held).
        self.overlap: str | None = None
        self.stood_down = False
        self.session = self.make_session()
        self.pending_resume: ResumeUpstream | None = None

    # -- to be given by each dialect
    def make_session(self) -> EmulatedSession:
        raise NotImplementedError

    def on_upstream_action(self, action: Action) -> None:
        raise NotImplementedError

    def wind_down_upstream(self) -> None:
        raise NotImplementedError

    # -- driving
    def feed(self, inp: Input) -> list[Action]:
        out = self.session.handle(inp)
        self.observe(out)
        return out

    def client(self, event: dict[str, Any]) -> list[Action]:
        raw = orjson.dumps(event).decode()
        return self.feed(ClientEvent(orjson.loads(raw), raw, self.now))

    def upstream(self, event: dict[str, Any]) -> list[Action]:
        raw = orjson.dumps(event).decode()
        return self.feed(UpstreamEvent(orjson.loads(raw), raw, self.now))

    def advance(self, ms: float) -> None:
        self.now += ms

    def observe(self, actions: list[Action]) -> None:
        for action in actions:
            if isinstance(action, SendClient | SendClientAudio):
                self.check_client_event(action)
            elif isinstance(action, AnalyzeAudio):
                end = action.start_sample + len(action.samples)
                assert action.start_sample >= 0
                self.analyzed_end = max(self.analyzed_end, end)
            elif isinstance(action, StandDown):
                self.stood_down = True
            elif type(action).__name__ == "ReportFault":
                raise AssertionError(f"the shim failed inside handle(): {action!r}")
            else:
                self.on_upstream_action(action)

    def check_client_event(self, action: SendClient | SendClientAudio) -> None:
        event = action.event
        kind = event.get("type")
        assert "server_event_seq" not in event, f"{kind} carries a seq of its own"
        stamped = orjson.loads(self.journal.stamp(event, self.now))
        assert stamped["server_event_seq"] > self.last_seq
        self.last_seq = stamped["server_event_seq"]
        rid = event.get("response_id")
        if rid is None and kind in ("response.created", "response.done"):
            rid = event["response"]["id"]
        assert rid not in self.done, f"{kind} for {rid} after its response.done"
        own_item = str(event.get("item_id", "")).startswith(f"item_{SID[-12:]}")
        if kind == "input_audio_buffer.speech_started" and own_item:
            self.overlap = str(event["item_id"])
        elif kind == "input_audio_buffer.speech_stopped" and event.get("item_id") == self.overlap:
            self.overlap = None
        elif kind == "response.done" and event["response"].get("status_details") == {
            "type": "cancelled",
            "reason": "turn_detected",
        }:
            self.overlap = None
        if isinstance(action, SendClientAudio):
            assert action.n_samples > 0 and action.rate_hz > 0
            item = event.get("item_id")
            assert isinstance(item, str)
            self.sent_ms[item] = self.sent_ms.get(item, 0.0) + action.n_samples * 1000 / (
                action.rate_hz
            )
            if item not in self.items:
                self.items.append(item)
        elif kind == "response.created":
            rid = event["response"]["id"]
            assert rid not in self.created, f"response {rid} created twice"
            self.created.add(rid)
        elif kind == "response.done":
            rid = event["response"]["id"]
            assert rid in self.created, f"response.done for {rid}, never created"
            assert rid not in self.done, f"a second response.done for {rid}"
            self.done.add(rid)
        elif kind == "conversation.item.truncated":
            end = event["audio_end_ms"]
            item = event["item_id"]
            assert isinstance(end, int) and end >= 0
            sent = self.sent_ms.get(item, 0.0)
            assert end <= sent + 0.5, f"{item} truncated at {end} ms, {sent:.1f} ms sent"
        elif kind == "error":
            code = event["error"]["code"]
            assert isinstance(code, str) and code
            # A failure inside handle() comes out as internal_error, not an exception.
            assert code != "internal_error", event["error"]["message"]

    # -- client rules
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


class TurnBasedMachine(ShimMachine):
    """duplex_emulated over a turn-based upstream (the shim names the responses)."""

    def make_session(self) -> EmulatedSession:
        settings = ShimSettings(vad=VadParams(), min_barge_in_ms=200, echo_suppression=True)
        self.generating = False
        return TurnBasedSession(SID, "demo", "demo-up", settings)

    def on_upstream_action(self, action: Action) -> None:
        if isinstance(action, SendUpstream):
            ev = action.event
            if ev.get("type") == "input_audio_buffer.commit" and ev.get("final"):
                self.generating = True
        elif isinstance(action, AbortUpstream):
            self.generating = False  # a fresh socket: nothing generating on it

    def after_move(self) -> None:
        self.generating = False  # the new replica dials its own upstream

    def wind_down_upstream(self) -> None:
        for _ in range(8):  # a finished response starts the next turn still waiting
            if not self.generating:
                return
            self.generating = False
            self.upstream({"type": "transcription.done", "text": "all of it"})
            self.upstream({"type": "response.output_audio.done", "has_audio": True})

    @rule(
        ms=steps_ms,
        chunks=st.integers(1, 8),
        audio_ms=st.sampled_from([20, 100, 500]) | st.integers(1, 1000),
        rate=st.sampled_from([16000, 24000]),
        text=st.text(max_size=8),
        finish=st.booleans(),
    )
    def upstream_answer(
        self, ms: int, chunks: int, audio_ms: int, rate: int, text: str, finish: bool
    ) -> None:
        """The upstream's output: transcript and audio deltas, ``ms`` apart, and maybe
        its end."""
        for _ in range(chunks):
            self.advance(ms)
            self.upstream({"type": "transcription.delta", "delta": text})
            self.upstream(
                {
                    "type": "response.output_audio.delta",
                    "audio": pcm(audio_ms, rate),
                    "format": "pcm16",
                    "sample_rate_hz": rate,
                }
            )
        if finish:
            self.upstream_ends("done")

    @rule(
        kind=st.sampled_from(
            ["bad_audio", "transcription.done", "session.created", "session.updated", "x.unknown"]
        ),
        junk=st.sampled_from(["AAE=", "!!", None]) | st.binary(max_size=5).map(b64encode),
        text=st.none() | st.text(max_size=12),
    )
    def upstream_noise(self, kind: str, junk: str | None, text: str | None) -> None:
        """Upstream events off the main path: undecodable audio, a final text, others."""
        if kind == "bad_audio":
            self.upstream({"type": "response.output_audio.delta", "audio": junk})
        elif kind == "transcription.done":
            self.upstream({"type": kind, "text": text})
        else:
            self.upstream({"type": kind, "id": "sess-up"})

    @rule(
        chunks=st.integers(1, 8),
        audio_ms=st.sampled_from([100, 500]) | st.integers(1, 1000),
        finish=st.booleans(),
    )
    def exchange(self, chunks: int, audio_ms: int, finish: bool) -> None:
        """A user turn and the start (or all) of its answer: the common case, in one step."""
        self.user_turn(20, 20)
        self.upstream_answer(5, chunks, audio_ms, 24000, "word ", finish)

    @rule(how=st.sampled_from(["done", "error", "error_coded", "lost"]))
    def upstream_ends(self, how: str) -> None:
        """The generation ends: complete, with an error, or with the socket."""
        self.generating = False
        if how == "done":
            self.upstream({"type": "response.output_audio.done", "has_audio": True})
        elif how == "lost":
            self.feed(UpstreamLost("socket closed", self.now))
        else:
            event: dict[str, Any] = {"type": "error", "error": {"message": "boom"}}
            if how == "error_coded":
                event["code"] = "overloaded"
            self.upstream(event)


class RelayMachine(ShimMachine):
    """barge_in_emulated over a duplex upstream (the upstream names the responses)."""

    def make_session(self) -> EmulatedSession:
        settings = ShimSettings(vad=VadParams(), min_barge_in_ms=200, echo_suppression=True)
        session = BargeInRelaySession(SID, "demo", settings, {"supports_barge_in": False})
        # Upstream session and response ids stay unique across moves, as real ones are.
        self.up_n = getattr(self, "up_n", -1) + 1
        self.resp_n = getattr(self, "resp_n", 0)
        self.up_seq = 0
        self.up_id = f"up-{self.up_n}"
        self.up_response: str | None = None
        self.up_item: str | None = None
        self.up_log: list[dict[str, Any]] = []  # the upstream's journal, for replays
        session.handle(
            UpstreamReattached(
                {"type": "session.created", "session": {"id": self.up_id}, "resume_token": "t"},
                0.0,
            )
        )
        return session

    def up(self, event: dict[str, Any]) -> list[Action]:
        """One event from the upstream, numbered as its journal numbers them."""
        self.up_seq += 1
        self.up_log.append({**event, "server_event_seq": self.up_seq})
        return self.upstream(self.up_log[-1])

    def replay_after(self, seq: int) -> None:
        """What the upstream replays on a resume: its events after ``seq``, in order."""
        for event in [e for e in self.up_log if e["server_event_seq"] > seq]:
            self.upstream(event)

    def on_upstream_action(self, action: Action) -> None:
        if isinstance(action, ResumeUpstream):
            self.pending_resume = action
        elif isinstance(action, AbortUpstream):
            # The edge dials a fresh upstream session; its seqs count from 1 again.
            self.up_n += 1
            self.up_id, self.up_seq = f"up-{self.up_n}", 0
            self.up_response = self.up_item = None
            self.up_log = []
            self.pending_resume = None
            created = {"type": "session.created", "session": {"id": self.up_id}}
            self.feed(UpstreamReattached({**created, "resume_token": f"tk{self.up_n}"}, self.now))
        elif isinstance(action, SendUpstream):
            ev = action.event
            cut = ev.get("type") in ("response.cancel", "output_audio_buffer.clear")
            if cut and ev.get("response_id") == self.up_response:
                # vLLM-Omni answers a cancel, or a clear of a response it still
                # generates, with the response's own done, cancelled.
                rid = self.up_response
                self.up_response = self.up_item = None
                self.up({"type": "response.done", "response": {"id": rid, "status": "cancelled"}})

    def after_move(self) -> None:
        # The new replica resumes nothing here: its upstream is a fresh one.
        self.on_upstream_action(AbortUpstream("moved"))

    def wind_down_upstream(self) -> None:
        if self.pending_resume is not None:
            self.resume(True)
        if self.up_response is not None:
            self.upstream_response_done()

    def connected(self) -> bool:
        return self.pending_resume is None and not self.stood_down

    @precondition(lambda self: self.connected() and self.up_response is None)
    @rule(ms=steps_ms)
    def upstream_response_created(self, ms: int) -> None:
        self.advance(ms)
        self.resp_n += 1
        rid = f"resp-{self.up_n}-{self.resp_n}"
        self.up_response, self.up_item = rid, f"item_{rid}"
        self.up({"type": "response.created", "response": {"id": rid, "status": "in_progress"}})

    @precondition(lambda self: self.connected() and self.up_response is not None)
    @rule(
        ms=steps_ms,
        audio_ms=st.sampled_from([20, 100, 1000, 2000]) | st.integers(1, 2000),
        rate=st.sampled_from([22050, 24000]),
    )
    def upstream_audio(self, ms: int, audio_ms: int, rate: int) -> None:
        self.advance(ms)
        self.up(
            {
                "type": "response.output_audio.delta",
                "response_id": self.up_response,
                "item_id": self.up_item,
                "output_index": 0,
                "content_index": 0,
                "delta": pcm(audio_ms, rate),
                "sample_rate_hz": rate,
            }
        )

    @precondition(lambda self: self.connected() and self.up_response is None)
    @rule(
        chunks=st.integers(1, 8),
        audio_ms=st.sampled_from([100, 500]) | st.integers(1, 1000),
        finish=st.booleans(),
    )
    def exchange(self, chunks: int, audio_ms: int, finish: bool) -> None:
        """A response and (some of) its audio and words, maybe its end, in one step."""
        self.upstream_response_created(5)
        for _ in range(chunks):
            self.upstream_transcript(5, "word ")
            self.upstream_audio(5, audio_ms, 24000)
        if finish:
            self.upstream_response_done()

    @precondition(lambda self: self.connected() and self.up_response is not None)
    @rule(ms=steps_ms, text=st.text(max_size=8))
    def upstream_transcript(self, ms: int, text: str) -> None:
        self.advance(ms)
        self.up(
            {
                "type": "response.output_audio_transcript.delta",
                "response_id": self.up_response,
                "item_id": self.up_item,
                "delta": text,
            }
        )

    @precondition(lambda self: self.connected() and self.up_response is not None)
    @rule()
    def upstream_response_done(self) -> None:
        rid, item = self.up_response, self.up_item
        self.up_response = self.up_item = None
        self.up({"type": "response.output_audio.done", "response_id": rid, "item_id": item})
        self.up(
            {
                "type": "conversation.item.done",
                "item": {
                    "id": item,
                    "role": "assistant",
                    "content": [{"type": "output_audio", "transcript": "hi"}],
                },
            }
        )
        self.up({"type": "response.done", "response": {"id": rid, "status": "completed"}})

    @precondition(lambda self: self.connected())
    @rule(
        kind=st.sampled_from(
            [
                "input_audio_buffer.speech_started",
                "input_audio_buffer.speech_stopped",
                "input_audio_buffer.committed",
                "session.updated",
                "playback.acknowledged",
                "x.unknown",
                "error",
            ]
        )
    )
    def upstream_other(self, kind: str) -> None:
        event: dict[str, Any] = {"type": kind, "item_id": "item_user_1", "played_ms": 10}
        if kind == "error":
            event["error"] = {"type": "invalid_request_error", "code": "x", "message": "no"}
        self.up(event)

    @precondition(lambda self: self.connected() and self.up_seq > 0)
    @rule(back=st.integers(0, 3))
    def upstream_replays_an_old_event(self, back: int) -> None:
        seq = max(1, self.up_seq - back)
        self.upstream({"type": "x.replayed", "server_event_seq": seq})

    @precondition(lambda self: self.connected())
    @rule(seq=st.integers(0, 50))
    def checkpointed(self, seq: int) -> None:
        self.feed(UpstreamCheckpointed(self.up_id, seq, self.now))

    @precondition(lambda self: self.connected())
    @rule(resume=st.booleans())
    def upstream_lost(self, resume: bool) -> None:
        self.feed(UpstreamLost("socket closed", self.now, resume=resume))

    @precondition(lambda self: self.pending_resume is not None)
    @rule(ok=st.booleans())
    def resume(self, ok: bool) -> None:
        """The edge's answer to ResumeUpstream: the session back, or refused."""
        assert self.pending_resume is not None
        assert self.pending_resume.session_id == self.up_id
        assert self.pending_resume.after_seq <= self.up_seq
        after = self.pending_resume.after_seq
        self.pending_resume = None
        if ok:
            resumed = {"type": "session.resumed", "session_id": self.up_id, "resume_token": "tk"}
            self.feed(UpstreamReattached(resumed, self.now))
            self.replay_after(after)
        else:
            self.feed(UpstreamLost("resume refused", self.now, resume=False))

    @precondition(lambda self: self.connected())
    @rule()
    def move_resuming_the_upstream(self) -> None:
        """Another replica takes the session over and resumes its upstream session:
        the upstream replays what followed the snapshot, and the response goes on."""
        snap = orjson.loads(orjson.dumps(self.session.snapshot()))
        # The snapshot's upstream session, as its stored form names it.
        up = snap.get("upstream")
        if not isinstance(up, dict) or not up.get("id") or not isinstance(up.get("token"), str):
            return
        sid, seq = up["id"], up["seq"]
        assert sid == self.up_id and seq <= self.up_seq
        settings = ShimSettings(vad=VadParams(), min_barge_in_ms=200, echo_suppression=True)
        resumed = {"type": "session.resumed", "session_id": sid, "resume_token": "tk"}
        session = BargeInRelaySession(SID, "demo", settings, {"supports_barge_in": False})
        self.session = session
        self.restart_vad()
        self.observe(session.restore(snap, resumed=resumed, now=self.now))
        self.replay_after(seq)


TestTurnBasedSession = TurnBasedMachine.TestCase
TestTurnBasedSession.settings = RUNS
TestRelaySession = RelayMachine.TestCase
TestRelaySession.settings = RUNS
