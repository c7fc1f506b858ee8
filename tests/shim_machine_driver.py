"""Driving one emulated session for the shim's state machines, and watching what comes
out: every client event is checked as it is sent (its seq, its response's lifecycle,
a truncation within the audio sent, a coded error, never ``internal_error``) and no
fault may come out of ``handle()``. The rules are in tests/shim_machine.py."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis.stateful import RuleBasedStateMachine

from shim.actions import (
    Action,
    AnalyzeAudio,
    ResumeUpstream,
    SendClient,
    SendClientAudio,
    StandDown,
)
from shim.inputs import ClientEvent, Input, UpstreamEvent
from shim.journal import Journal
from shim.session import EmulatedSession
from tests.shim_machine_strategies import QUIET_WINDOWS, SID


class ShimDriver(RuleBasedStateMachine):
    """What both dialects share: the state, driving the session, and the checks of
    what it sends the client."""

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
