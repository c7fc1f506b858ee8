"""The GA relay's microphone gate on the input timeline (``shim/dialects/relay_gate.py``).

A client that sends nothing while the answer plays, then its next turn at once (faster
than real time) right after ``response.done``: the turn arrives while the microphone is
held, and the VAD hears it only later (it runs behind a burst). Whether held audio is
the user's turn or the answer's echo is judged where the audio lies on the input
timeline against the answer's end as the client plays it, not by when it arrived or
when the VAD got to it. By script: no sockets, no clock.
"""

from __future__ import annotations

from shim.actions import Action
from shim.inputs import VadWindow
from tests.shim_ga_relay_script import AID, RID, answer, make
from tests.shim_ga_turn_steps import (
    SILENCE,
    SPEECH,
    answer_in_real_time,
    burst,
    first_turn,
    released,
    sent_kinds,
)
from tests.shim_script import WINDOW, Script, detection, upstream_events


def vad_behind(sc: Script, probs: list[float], step_ms: float = 8.0) -> list[Action]:
    """The VAD's windows for that audio, coming back ``step_ms`` apart (a VAD behind a
    burst), with the edge's ticks between them."""
    out: list[Action] = []
    for p in probs:
        sc.now += step_ms
        sc.vad_end += WINDOW
        out += sc.s.handle(VadWindow(p, sc.vad_end, sc.now))
        out += sc.tick(0)
    while sc.s.wants_ticks(sc.now):  # the edge ticks while time can change something
        out += sc.tick(50)
    return out


def test_a_turn_sent_at_once_after_the_answer_reaches_the_upstream_whole_and_in_order() -> None:
    sc = make()
    first_turn(sc)
    answer_in_real_time(sc)
    # The answer plays 100 ms more, then its echo tail (echo_run.ECHO_TAIL_MS): the
    # turn's speech, 512 ms into the burst, is after it on the input timeline.
    probs = [SILENCE] * 16 + [SPEECH] * 31 + [SILENCE] * 28
    events, out = burst(sc, probs)
    assert not upstream_events(out), "the answer still plays: held"
    out += vad_behind(sc, probs)
    order = released(events, out)
    assert order, "the turn reaches the upstream"
    first = order[0]
    assert order == list(range(first, len(events))), "in order, nothing lost from its start"
    assert first <= 16, "from before the speech's onset"
    assert first >= 8, "what lies within the answer's echo tail stays held back"


def test_speech_within_the_answers_echo_tail_never_reaches_the_upstream() -> None:
    sc = make()
    first_turn(sc)
    answer_in_real_time(sc)
    # Speech 96-288 ms into the burst: the answer's last 100 ms and its tail on the
    # input timeline, and far quieter than the user (its echo, heard late): dropped;
    # what follows the tail goes on.
    probs = [SILENCE] * 3 + [SPEECH] * 6 + [SILENCE] * 40
    events, out = burst(sc, probs, peak=300)
    out += vad_behind(sc, probs)
    order = released(events, out)
    assert order and not set(order) & set(range(9)), order
    assert order == list(range(order[0], len(events)))


def test_a_turn_that_begins_in_the_tail_and_goes_on_past_it_goes_on_from_its_onset() -> None:
    sc = make()
    first_turn(sc)
    answer_in_real_time(sc)
    probs = [SILENCE] * 8 + [SPEECH] * 31 + [SILENCE] * 28  # onset 256 ms: within the tail
    events, out = burst(sc, probs)
    out += vad_behind(sc, probs)
    order = released(events, out)
    assert order and order[0] <= 8 and order == list(range(order[0], len(events))), order


def test_audio_the_vad_never_heard_does_not_move_the_judgement() -> None:
    """Push-to-talk for a while (nothing goes to the VAD), then server VAD again: the
    VAD's windows count only what it was given, the input timeline everything."""
    sc = make()
    first_turn(sc)
    detection(sc, on=False)
    for _ in range(50):  # 2 s in real time
        sc.audio(40)
        sc.tick(40)
    detection(sc, on=True)
    answer_in_real_time(sc)
    probs = [SILENCE] * 16 + [SPEECH] * 31 + [SILENCE] * 28
    events, out = burst(sc, probs)
    out += vad_behind(sc, probs)
    order = released(events, out)
    assert order and 8 <= order[0] <= 16 and order == list(range(order[0], len(events))), order


def test_push_to_talk_over_a_generated_answer_goes_whole_after_its_ack() -> None:
    """The client talks while the answer still plays, then commits: the upstream hears
    the answer acknowledged first (else the turn is an interjection over it), then all
    the audio, then the commit."""
    sc = make()
    first_turn(sc)
    detection(sc, on=False)
    answer_in_real_time(sc)
    events, out = burst(sc, [SPEECH] * 10)
    assert not upstream_events(out), "the upstream's answer is unacknowledged: held"
    out = sc.client({"type": "input_audio_buffer.commit"})
    assert sent_kinds(out) == ["playback.ack"] + ["input_audio_buffer.append"] * 10 + [
        "input_audio_buffer.commit"
    ]
    assert released(events, out) == list(range(10)), "whole and in order"
    # Once acknowledged, the next turn's audio goes on at once.
    assert sent_kinds(sc.audio(40)) == ["input_audio_buffer.append"]


def test_push_to_talk_audio_waits_for_the_answer_then_goes_whole() -> None:
    sc = make()
    first_turn(sc)
    detection(sc, on=False)
    answer_in_real_time(sc)
    events, out = burst(sc, [SPEECH] * 5)
    for _ in range(40):  # the answer plays out: the proxy acks it, the audio goes on
        out += sc.tick(50)
    kinds = sent_kinds(out)
    assert kinds == ["playback.ack"] + ["input_audio_buffer.append"] * 5, kinds
    assert released(events, out) == list(range(5))


def test_a_commit_under_server_vad_goes_behind_the_held_audio() -> None:
    """A GA client's own commit while the answer plays: the held audio past its end
    (and echo tail) in order, then the commit; the answer's end is left to the barge-in
    decision to report."""
    sc = make()
    first_turn(sc)
    answer_in_real_time(sc)
    events, out = burst(sc, [SPEECH] * 40)
    assert not upstream_events(out), "held"
    out = sc.client({"type": "input_audio_buffer.commit"})
    kinds = sent_kinds(out)
    assert "playback.ack" not in kinds and kinds[-1] == "input_audio_buffer.commit", kinds
    order = released(events, out)
    assert order == list(range(order[0], len(events))), order
    assert 8 <= order[0] <= 16, "what lies within the answer and its echo tail is dropped"


def test_a_commit_during_an_undecided_overlap_takes_the_speech_from_its_onset() -> None:
    sc = make()
    first_turn(sc)
    answer(sc, chunks=30)  # 3 s of answer, playing
    sc.speak([SILENCE] * 3)
    held = sc.speak([SPEECH] * 6)
    assert sc.s.overlap.holding and not upstream_events(held), "undecided, held"
    out = sc.client({"type": "input_audio_buffer.commit"})
    kinds = sent_kinds(out)
    assert kinds[-1] == "input_audio_buffer.commit", kinds
    assert kinds.count("input_audio_buffer.append") >= 6, "the speech, not dropped"


def test_a_commit_does_not_keep_a_later_cut_from_being_reported() -> None:
    sc = make()
    first_turn(sc)
    answer(sc, chunks=30)  # 3 s of answer, generated at once, playing
    sc.upstream({"type": "response.done", "response": {"id": RID, "status": "completed"}})
    sc.tick(500)
    sc.client({"type": "input_audio_buffer.commit"})
    out = sc.speak([SPEECH] * 40)  # a barge-in over the rest of the answer
    kinds = sent_kinds(out)
    assert "output_audio_buffer.clear" in kinds, kinds
    [ack] = [e for e in upstream_events(out) if e["type"] == "playback.ack"]
    assert ack["played_ms"] < 3000, "what was heard, not the whole answer"


def test_push_to_talk_after_a_truncate_acks_no_more_than_was_heard() -> None:
    sc = make()
    first_turn(sc)
    detection(sc, on=False)
    answer_in_real_time(sc)
    out = sc.client(
        {
            "type": "conversation.item.truncate",
            "item_id": AID,
            "content_index": 0,
            "audio_end_ms": 250,
        }
    )
    acks = [e["played_ms"] for e in upstream_events(out) if e["type"] == "playback.ack"]
    burst(sc, [SPEECH] * 5)
    out = sc.client({"type": "input_audio_buffer.commit"})
    for _ in range(40):
        out += sc.tick(50)
    acks += [e["played_ms"] for e in upstream_events(out) if e["type"] == "playback.ack"]
    assert acks == [250], acks


def test_a_clear_drops_the_held_audio() -> None:
    sc = make()
    first_turn(sc)
    answer_in_real_time(sc)
    events, out = burst(sc, [SPEECH] * 10)
    out += sc.client({"type": "input_audio_buffer.clear"})
    assert sent_kinds(out) == ["input_audio_buffer.clear"]
    out = vad_behind(sc, [SPEECH] * 10)
    assert not released(events, out), "cleared audio never goes upstream"
