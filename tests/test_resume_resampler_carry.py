"""A move mid-answer while the proxy resamples: the client's audio goes on unbroken.

The client resampler holds back the last few tens of milliseconds of the upstream's
audio; the snapshot carries them (``shim/resampler_carry.py``), so the answer the
client gets across a move is the upstream's audio resampled once: as long as a
session that never moved gives, and the same to within the last bit.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pybase64
import pytest

from shim.actions import Action
from shim.assistant_audio import AssistantAudio
from shim.audio import AudioFormat, StreamResampler
from shim.dialects.duplex_relay import BargeInRelaySession
from shim.resampler_carry import Carry
from shim.session import ShimSettings
from shim.vad_gate import VadParams
from tests.shim_overlap_sessions import relay
from tests.shim_script import Script, client_events

RID, AID, UP = "resp-carry-1", "item_resp-carry-1", "duplex-up-1"
RESUMED = {"type": "session.resumed", "session_id": UP, "resume_token": "tok-2"}


def make(bound: bool = True) -> Script:
    settings = ShimSettings(vad=VadParams(), min_barge_in_ms=200, echo_suppression=False)
    caps = {"supports_barge_in": False, "supports_audio_truncate": False}
    session = BargeInRelaySession("sess_0123456789abcdef", "m", settings, caps)
    if bound:
        session.bind_upstream(
            {"type": "session.created", "session": {"id": UP}, "resume_token": "tok-1"}
        )
    return Script(session)


def answer(rate: int, deltas: int, ms: int = 80) -> list[dict[str, Any]]:
    """The upstream's events of one answer (seq from 10): noise, so a gap shows."""
    noise = np.random.default_rng(7).standard_normal(rate * ms * deltas // 1000) * 3000
    pcm = noise.astype(np.int16)
    n = rate * ms // 1000
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {"id": RID, "status": "in_progress"}}
    ]
    for i in range(deltas):
        chunk = pcm[i * n : (i + 1) * n].astype("<i2").tobytes()
        events.append(
            {"type": "response.output_audio.delta", "response_id": RID, "item_id": AID}
            | {"delta": pybase64.b64encode(chunk).decode(), "sample_rate_hz": rate}
        )
    events.append({"type": "response.output_audio.done", "response_id": RID, "item_id": AID})
    events.append({"type": "response.done", "response": {"id": RID, "status": "completed"}})
    return [ev | {"server_event_seq": 10 + i} for i, ev in enumerate(events)]


def heard(actions: list[Action]) -> np.ndarray:  # type: ignore[type-arg]
    chunks = [
        np.frombuffer(pybase64.b64decode(ev["delta"]), dtype="<i2")
        for ev in client_events(actions)
        if ev["type"] == "response.output_audio.delta"
    ]
    return np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.int16)


def feed(sc: Script, events: list[dict[str, Any]]) -> list[Action]:
    out: list[Action] = []
    for ev in events:
        out += sc.upstream(dict(ev))
    return out


@pytest.mark.parametrize("rate", [22050, 16000, 44100])
@pytest.mark.parametrize("moved_after", [1, 3, 20])
def test_the_answer_moved_mid_stream_is_the_upstreams_resampled_once(
    rate: int, moved_after: int
) -> None:
    events = answer(rate, deltas=30)
    whole = heard(feed(make(), events))
    assert whole.size == 24000 * 30 * 80 // 1000, "a session that never moved: all of it"

    before = make()
    first = feed(before, events[: 1 + moved_after])
    after = make(bound=False)
    assert isinstance(after.s, BargeInRelaySession)
    after.s.restore(before.s.snapshot(), RESUMED, now=after.now)
    rest = feed(after, events[1 + moved_after :])  # the upstream's replay, and on
    got = np.concatenate([heard(first), heard(rest)])
    assert got.size == whole.size, "no gap and no repeat at the move"
    assert int(np.abs(got.astype(np.int32) - whole.astype(np.int32)).max()) <= 2


def test_moved_twice_before_a_new_delta_still_loses_nothing() -> None:
    events = answer(22050, deltas=12)
    whole = heard(feed(make(), events))
    first = make()
    out = feed(first, events[:5])
    second = make(bound=False)
    assert isinstance(second.s, BargeInRelaySession)
    second.s.restore(first.s.snapshot(), RESUMED, now=second.now)
    third = make(bound=False)
    assert isinstance(third.s, BargeInRelaySession)
    third.s.restore(second.s.snapshot(), RESUMED, now=third.now)
    got = np.concatenate([heard(out), heard(feed(third, events[5:]))])
    assert got.size == whole.size
    assert int(np.abs(got.astype(np.int32) - whole.astype(np.int32)).max()) <= 2


def test_no_carry_where_nothing_is_resampled() -> None:
    audio = AssistantAudio()
    out = AudioFormat("pcm16", 24000)
    audio.convert(np.ones(2400, dtype=np.int16), 24000, out, False, lambda d: {"delta": d})
    assert audio.carry(at_mark=False) is None


def test_a_carry_to_g711_covers_its_longer_hold() -> None:
    rate, out = 24000, AudioFormat("g711_ulaw", 8000)
    pcm = (np.random.default_rng(3).standard_normal(rate) * 3000).astype(np.int16)
    audio = AssistantAudio()
    for i in range(0, 11520, 1920):
        audio.convert(pcm[i : i + 1920], rate, out, False, lambda d: {"delta": d})
    raw = audio.carry(at_mark=False)
    carried = Carry.from_wire(raw)
    assert carried is not None and carried.skip > 0
    # what a resampler that never stopped still held, made again
    ref = StreamResampler(rate, 8000)
    given = sum(ref.process(pcm[i : i + 1920]).size for i in range(0, 11520, 1920))
    held = ref.flush()
    fresh = StreamResampler(rate, 8000)
    again = np.concatenate([fresh.process(carried.tail), fresh.flush()])[carried.skip :]
    assert given == 11520 // 3 - held.size and again.size == held.size
    assert int(np.abs(again.astype(np.int32) - held.astype(np.int32)).max()) <= 2


@pytest.mark.parametrize(
    "raw", [None, {}, {"rate": 22050}, {"rate": 1, "out_rate": 2, "tail": "!", "skip": 0}]
)
def test_a_malformed_carry_starts_afresh(raw: Any) -> None:
    assert Carry.from_wire(raw) is None


def test_held_output_carries_the_resampler_as_of_the_hold_mark() -> None:
    """Output held over the user's speech (an overlap undecided) is not the client's: a
    move goes on from before it, so the carry is the one from there."""
    events = answer(22050, deltas=12)
    plain = make()
    feed(plain, events[:5])
    expected = plain.s.snapshot()
    held = relay()
    feed(held, events[:5])
    held.speak([0.97] * 6)  # undecided: what comes now is held
    feed(held, events[5:9])
    assert held.s.overlap.holding
    snap = held.s.snapshot()
    assert snap["upstream"]["seq"] == expected["upstream"]["seq"] == 14
    assert snap["resampler"] is not None and snap["resampler"] == expected["resampler"]
