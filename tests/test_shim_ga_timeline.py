"""The GA relay's map of the upstream's input timeline: what it records is what the
upstream got, when and in the order it got it (``shim/upstream_timeline.py``)."""

from __future__ import annotations

import base64
from typing import Any

from proxy.emulated.shim_setup import apply_opening, keep_opened_with
from shim.actions import Action, SendClient, SendUpstream
from shim.dialects.ga_relay import GaRelaySession
from shim.ga_upstream import opening_session
from shim.upstream_timeline import UpstreamTimeline
from shim.vad_gate import VadParams
from tests.shim_ga_instructions_lock import make_with
from tests.shim_ga_relay_script import RID, answer, make
from tests.shim_ga_turn_steps import (
    SILENCE,
    SPEECH,
    burst,
    done,
    first_turn,
    not_interrupting,
    pressed_over,
)
from tests.shim_script import Script, detection

STARTED = "input_audio_buffer.speech_started"
WINDOW_MS = 32
PADDING_MS = 300  # vLLM-Omni's default prefix_padding_ms, which the GA relay states


def timeline(sc: Script) -> UpstreamTimeline:
    session = sc.s
    assert isinstance(session, GaRelaySession)
    return session.upstream_timeline


def told_start(sc: Script, ms: int) -> int:
    acts = sc.upstream({"type": STARTED, "audio_start_ms": ms, "item_id": "item_x"})
    for _ in range(40):  # anything held goes once nothing plays
        acts += sc.tick(50)
    [start] = [
        a.event["audio_start_ms"]
        for a in acts
        if isinstance(a, SendClient) and a.event["type"] == STARTED
    ]
    return int(start)


def appends(out: list[Action]) -> list[dict[str, Any]]:
    return [
        a.event
        for a in out
        if isinstance(a, SendUpstream) and a.event.get("type") == "input_audio_buffer.append"
    ]


def test_a_padded_start_of_a_kept_turn_is_not_put_before_the_dropped_span() -> None:
    sc = make()
    not_interrupting(sc)  # GA interrupt_response false: speech over the answer is kept
    first_turn(sc)  # 40 windows, all upstream: its clock and the client's agree
    answer(sc, chunks=40)
    sc.upstream({"type": "response.done", "response": {"id": RID, "status": "completed"}})
    out = sc.speak([SILENCE] * 100)  # over the answer: held, then dropped
    onset_window = 140
    out += sc.speak([SPEECH] * 40 + [SILENCE] * 25)
    while sc.s.wants_ticks(sc.now):
        out += sc.tick(50)
    went = len(appends(out))
    assert 0 < went < 125, went  # the turn goes from just before its onset
    dropped = 165 - went
    up_onset = (onset_window - dropped) * WINDOW_MS  # on the upstream's clock
    # vLLM-Omni says the onset less its padding, which reaches into the first turn.
    got = told_start(sc, up_onset - PADDING_MS)
    assert got == onset_window * WINDOW_MS - PADDING_MS, got  # as a direct client's


def _float_ms(out: list[Action], rate: int = 24000) -> float:
    return sum(len(base64.b64decode(ev["audio"])) // 4 for ev in appends(out)) * 1000 / rate


def test_a_clear_takes_a_float_upstreams_incomplete_unit_off_the_map() -> None:
    sc = make_with(chunk_period_ms=80)
    float_in = {"input_audio_format": "pcm_f32le", "sample_rate_hz": 24000}
    sc.s.bind_upstream({"type": "session.created", "session": {"id": "up-f", **float_in}})
    out: list[Action] = []
    for _ in range(5):
        out += sc.audio(300)  # 3 units upstream, 60 ms waiting for the next append
        out += sc.client({"type": "input_audio_buffer.clear"})  # which drops them
    got = _float_ms(out)
    assert got == 1200
    counted = timeline(sc).now.sent_samples / 16
    assert abs(counted - got) <= 2, counted  # (the input history's resampling)
    sc.audio(160)  # after the last clear: 1.2 s on for the upstream, 1.5 s for the client
    assert abs(told_start(sc, 1200) - 1500) <= 2


def test_audio_behind_a_waiting_commit_is_recorded_when_it_goes() -> None:
    sc = make()
    pressed_over(sc)  # push-to-talk, an answer still generated
    burst(sc, [SPEECH] * 10)  # A: 320 ms, held
    sc.client({"type": "input_audio_buffer.commit"})  # waits for the answer's end
    detection(sc, on=True)  # server VAD again: the update waits behind the commit
    burst(sc, [SPEECH] * 5)  # B: 160 ms, waits behind them
    done(sc)  # the upstream gets: ack, A, commit, update (its clock restarts), B
    for _ in range(60):
        sc.tick(50)  # the answer played out, and its echo tail
    c_start = timeline(sc).now.wire()["runs"][-1][1] / 16 + 160  # C's, on the client's
    burst(sc, [SPEECH] * 30)  # C: 960 ms, straight upstream
    # The upstream hears speech 800 ms into C: on its clock (since the update) B + 800.
    assert told_start(sc, 160 + 800 - PADDING_MS) == round(c_start + 800 - PADDING_MS)
    assert timeline(sc).now.sent_samples == (160 + 960) * 16


def test_the_ga_opening_sets_the_upstreams_padding() -> None:
    """A GA client's opening, as the upstream opened with it (``opening_session``):
    its padding, not vLLM-Omni's default."""
    sc = make()
    td = {"type": "server_vad", "prefix_padding_ms": 1000}
    client = {"type": "realtime", "audio": {"input": {"turn_detection": td}}}
    apply_opening(sc.s, {"type": "session.update", "session": client})
    keep_opened_with(sc.s, {"model": "m", **opening_session(client, {}, VadParams())})
    assert timeline(sc).padding_ms == 1000


def test_a_ga_session_opened_without_turn_detection_has_no_padding() -> None:
    """The upstream refused the GA opening's turn detection and was opened without it."""
    sc = make()
    opening = opening_session(None, {}, VadParams(prefix_padding_ms=500))  # [vad]'s
    keep_opened_with(sc.s, {"model": "m", **opening})
    assert timeline(sc).padding_ms == 500
    trimmed = dict(opening)
    del trimmed["turn_detection"]
    keep_opened_with(sc.s, {"model": "m", **trimmed})
    assert timeline(sc).padding_ms is None
