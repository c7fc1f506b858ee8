"""barge_in_emulated: a connection lost while an overlap is held, resumed on another
replica. The new replica's echo suppressor starts afresh, its microphone timeline at
zero, and the answer's audio held on the old one arrives at once, placed from that same
zero: its first delay search sees one chunk of each. A first chunk of the user's that
resembles the answer (a stand-in model answers in the user's own voice) locked the
delay there, with a coupling as loud as the user: the rest of the speech was then
suppressed as echo, never began an overlap, and the answer played out while the
user's words were dropped at its end (``shim/echo_mic.py``, ``full``)."""

from __future__ import annotations

import numpy as np

from shim.audio import b64encode, float_to_int16
from shim.dialects.duplex_relay import BargeInRelaySession
from shim.session import ShimSettings
from shim.vad_gate import VadParams
from tests.duplex_relay_script import AID, RID, UP, relay
from tests.shim_script import Script, types, upstream_events

RATE = 24000
# The answer: voice-band noise (what the correlation search sees of a voice), 24 kHz.
ANSWER = float_to_int16(
    0.3
    * np.convolve(np.random.default_rng(5).standard_normal(RATE * 6), np.hanning(24) / 12, "same")
)


def session(bound: bool = True) -> Script:
    settings = ShimSettings(vad=VadParams(), min_barge_in_ms=200, echo_suppression=True)
    caps = {"supports_barge_in": True}
    s = BargeInRelaySession("sess_0123456789abcdef", "m", settings, caps)
    if bound:
        s.bind_upstream({"type": "session.created", "session": {"id": UP}, "resume_token": "tok-1"})
    return Script(s)


def delta(i: int) -> dict:  # type: ignore[type-arg]
    """The answer's ``i``-th 100 ms, journaled at seq 10 + i."""
    pcm = ANSWER[i * RATE // 10 : (i + 1) * RATE // 10]
    return {
        "type": "response.output_audio.delta",
        "response_id": RID,
        "item_id": AID,
        "output_index": 0,
        "content_index": 0,
        "delta": b64encode(pcm.tobytes()),
        "format": "pcm16",
        "sample_rate_hz": RATE,
        "server_event_seq": 10 + i,
    }


def test_speech_held_over_the_answer_is_decided_after_a_move() -> None:
    a = session()
    a.upstream({"type": "response.created", "response": {"id": RID}, "server_event_seq": 9})
    for i in range(10):
        a.upstream(delta(i))
        a.speak([0.05] * 3)
    assert not types(a.speak([0.9] * 3)), "held, undecided"
    assert relay(a).overlap.holding
    for i in range(10, 13):
        assert not types(a.upstream(delta(i))), "the answer's audio is held"
    snap = a.s.snapshot()

    b = session(bound=False)
    b.now = a.now
    resumed = {"type": "session.resumed", "session_id": UP, "resume_token": "tok-2"}
    relay(b).restore(snap, resumed, now=a.now)
    out = []
    for i in range(10, 20):  # the upstream replays what the old replica held
        out += b.upstream(delta(i))
    echo = b.s.echo
    assert echo is not None
    # The user's first chunk on the new replica happens to resemble the answer as it
    # now plays (and is as loud as the user): then the user speaks on.
    like = np.clip(echo.far.samples(0, 480) * 131072, -32768, 32767).astype(np.int16)
    out += b.client({"type": "input_audio_buffer.append", "audio": b64encode(like.tobytes())})
    out += b.speak([0.9] * 30)
    told = types(out)
    assert told.count("input_audio_buffer.speech_started") == 1, told
    assert told.count("conversation.item.truncated") == 1, told
    done = [e for e in told if e == "response.done"]
    assert len(done) == 1
    sent = [e["type"] for e in upstream_events(out)]
    assert "output_audio_buffer.clear" in sent or "response.cancel" in sent, sent
    # The user's speech goes upstream (the held audio from its onset, then live).
    assert sent.count("input_audio_buffer.append") >= 25, sent
