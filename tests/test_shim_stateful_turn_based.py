"""Stateful properties of duplex_emulated over a turn-based upstream (the shim names the
responses), through ``handle`` only: the invariants in tests/shim_machine.py."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import rule

from shim.actions import AbortUpstream, Action, SendUpstream
from shim.audio import b64encode
from shim.dialects.turn_based import TurnBasedSession
from shim.inputs import UpstreamLost
from shim.session import EmulatedSession, ShimSettings
from shim.vad_gate import VadParams
from tests.shim_machine import ShimMachine
from tests.shim_machine_strategies import RUNS, SID, pcm, steps_ms


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


TestTurnBasedSession = TurnBasedMachine.TestCase
TestTurnBasedSession.settings = RUNS
