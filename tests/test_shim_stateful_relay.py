"""Stateful properties of barge_in_emulated over a duplex upstream (the upstream names the
responses, numbers its events, is lost and resumed), through ``handle`` only: the
invariants in tests/shim_machine.py."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from shim.actions import AbortUpstream, Action, ResumeUpstream, SendUpstream
from shim.dialects.duplex_relay import BargeInRelaySession
from shim.inputs import UpstreamCheckpointed, UpstreamLost, UpstreamReattached
from shim.session import EmulatedSession, ShimSettings
from shim.vad_gate import VadParams
from tests.shim_machine import ShimMachine
from tests.shim_machine_strategies import RUNS, SID, pcm, steps_ms


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


TestRelaySession = RelayMachine.TestCase
TestRelaySession.settings = RUNS
