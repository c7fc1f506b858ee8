"""GA ``interrupt_response: false`` over a duplex upstream (``shim/dialects/relay_keep.py``).

The user's speech while the answer plays does not cut it, but is still the user's turn:
the proxy holds it from the upstream (to which it would be an overlap: a barge-in, or
an interjection dropped) and sends it, from its onset, once the answer's end is
acknowledged; the answer's echo never becomes a turn. By script: no sockets, no clock.
"""

from __future__ import annotations

from typing import Any

from shim.actions import Action, SendUpstream
from tests.shim_ga_relay_script import RID, answer, make
from tests.shim_ga_turn_steps import SILENCE, SPEECH, first_turn, not_interrupting, sent_kinds
from tests.shim_script import Script, upstream_events

CUTS = {"response.cancel", "output_audio_buffer.clear", "conversation.item.truncate"}


def appends(out: list[Action]) -> list[dict[str, Any]]:
    return [
        a.event
        for a in out
        if isinstance(a, SendUpstream) and a.event["type"] == "input_audio_buffer.append"
    ]


def over_a_long_answer(peak: int = 4000) -> tuple[Script, list[Action], list[Action]]:
    """A 4 s answer; 1.3 s of speech over it at ``peak``, then silence, all before its end;
    what went upstream while it played, and after (until nothing more can change)."""
    sc = make()
    first_turn(sc)
    not_interrupting(sc)
    answer(sc, chunks=40)
    sc.upstream({"type": "response.done", "response": {"id": RID, "status": "completed"}})
    during = sc.speak([SILENCE] * 5, peak=peak)
    during += sc.speak([SPEECH] * 40 + [SILENCE] * 25, peak=peak)
    after: list[Action] = []
    while sc.s.wants_ticks(sc.now):
        after += sc.tick(50)
    return sc, during, after


def test_speech_wholly_over_the_answer_is_a_turn_the_upstream_hears_after_its_end() -> None:
    sc, during, after = over_a_long_answer()
    assert not upstream_events(during), "the answer owns the turn upstream: held"
    kinds = sent_kinds(after)
    assert not CUTS & set(kinds), "the answer is not cut"
    assert kinds[0] == "playback.ack", "its end acknowledged first: then no overlap to it"
    sent = appends(after)
    assert len(sent) >= 40 + 25, "the speech from its onset, and the silence after it"
    assert len(sent) <= 40 + 25 + 5, "not the silence before it"
    # What follows goes on at once: the gate is open.
    assert sent_kinds(sc.audio(40)) == ["input_audio_buffer.append"]


def test_the_answers_echo_over_it_never_becomes_a_turn() -> None:
    _, during, after = over_a_long_answer(peak=300)  # far quieter than the user: echo
    assert not upstream_events(during)
    assert not appends(after), "dropped as before: nothing of it goes upstream"


def test_with_interrupt_response_the_overlap_decides_as_before() -> None:
    """The default: the same speech is a barge-in, cut upstream, then the user's words."""
    sc = make()
    first_turn(sc)
    not_interrupting(sc, interrupt=True)
    answer(sc, chunks=40)
    sc.upstream({"type": "response.done", "response": {"id": RID, "status": "completed"}})
    out = sc.speak([SILENCE] * 5 + [SPEECH] * 40)
    kinds = sent_kinds(out)
    assert "output_audio_buffer.clear" in kinds, kinds
    assert kinds.index("output_audio_buffer.clear") < kinds.index("input_audio_buffer.append")
