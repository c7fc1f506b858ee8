"""A GA client's push-to-talk turn pressed over an answer (``shim/dialects/relay_turn_wait.py``).

vLLM-Omni takes a commit made while its answer is in progress (generated, or played
and unacknowledged) only as an acknowledgement: a short turn is dropped as an
interjection and ``response.create`` is refused (``docs/fidelity.md``, row 1a). A GA
client presses the button anyway, cancelling and truncating the answer or talking
over it. What reaches the upstream, in what order, by script: no sockets, no clock.
"""

from __future__ import annotations

from shim.actions import Action
from tests.shim_ga_relay_script import AID, RID, make
from tests.shim_ga_turn_steps import (
    APPEND,
    COMMIT,
    CREATE,
    SPEECH,
    burst,
    done,
    first_turn,
    generating,
    pressed_over,
    released,
    sent_kinds,
)
from tests.shim_script import Script, client_events, detection, upstream_events


def commit_and_create(sc: Script) -> list[Action]:
    return sc.client({"type": COMMIT}) + sc.client({"type": CREATE})


def truncate(sc: Script, end_ms: int) -> list[Action]:
    ev = {"type": "conversation.item.truncate", "item_id": AID, "content_index": 0}
    return sc.client({**ev, "audio_end_ms": end_ms})


def acks(out: list[Action]) -> list[int]:
    return [e["played_ms"] for e in upstream_events(out) if e["type"] == "playback.ack"]


def test_a_turn_over_an_answer_still_generated_waits_for_its_end_then_goes_whole() -> None:
    """Talked over, not cancelled: the commit, the response.create and the next turn's
    audio wait; at the answer's end the upstream hears it acknowledged in full, then
    the whole turn, the commit, the request, and then what followed, in order."""
    sc = make()
    pressed_over(sc)
    turn, out = burst(sc, [SPEECH] * 10)
    out += commit_and_create(sc)
    after, more = burst(sc, [SPEECH] * 3)
    assert sent_kinds(out + more) == [], "no commit goes while the answer is generated"
    out = done(sc)
    assert sent_kinds(out) == ["playback.ack", *[APPEND] * 10, COMMIT, CREATE, *[APPEND] * 3]
    assert acks(out) == [1000], "the answer in full: GA, an answer not truncated was heard"
    assert released(turn, out) == list(range(10)) and released(after, out) == [0, 1, 2]


def test_a_clear_after_a_waiting_commit_waits_behind_it() -> None:
    sc = make()
    pressed_over(sc)
    turn, _ = burst(sc, [SPEECH] * 5)
    sc.client({"type": COMMIT})
    assert sent_kinds(sc.client({"type": "input_audio_buffer.clear"})) == []
    out = done(sc)
    kinds = sent_kinds(out)
    assert kinds == ["playback.ack", *[APPEND] * 5, COMMIT, "input_audio_buffer.clear"], kinds
    assert released(turn, out) == list(range(5)), "the committed turn is not cleared"


def test_a_cancel_or_truncate_after_a_waiting_commit_goes_at_once() -> None:
    """The client's word on the answer is not queued behind its commit: the cut goes
    at once, and the turn follows it."""
    sc = make()
    pressed_over(sc)
    turn, out = burst(sc, [SPEECH] * 5)
    out += commit_and_create(sc)
    assert sent_kinds(sc.client({"type": "response.cancel"})) == ["response.cancel"]
    out = truncate(sc, 250)
    kinds = sent_kinds(out)
    assert kinds[:2] == ["playback.ack", "output_audio_buffer.clear"], kinds
    assert kinds[-7:] == [*[APPEND] * 5, COMMIT, CREATE], "cut: the turn goes behind it"
    assert released(turn, out) == list(range(5))


def test_a_turn_after_a_cancel_that_took_goes_without_an_ack() -> None:
    """The client's cancel reached the upstream while it generated: its playback is
    over to it (its response.done says cancelled), so no ack of the answer in full."""
    sc = make()
    pressed_over(sc)
    assert sent_kinds(sc.client({"type": "response.cancel"})) == ["response.cancel"]
    turn, out = burst(sc, [SPEECH] * 5)
    out += commit_and_create(sc)
    assert sent_kinds(out) == []
    out = done(sc, "cancelled")
    assert sent_kinds(out) == [*[APPEND] * 5, COMMIT, CREATE]
    assert released(turn, out) == list(range(5))
    for _ in range(40):  # nor later, by the playback clock
        out += sc.tick(50)
    assert acks(out) == []


def test_a_turn_after_a_cancel_that_came_too_late_goes_behind_the_ack() -> None:
    """The upstream had finished generating when the client's cancel reached it: it
    refused it, and its answer plays on to it until acknowledged."""
    sc = make()
    pressed_over(sc)
    sc.client({"type": "response.cancel"})
    turn, out = burst(sc, [SPEECH] * 5)
    out += commit_and_create(sc)
    refused = sc.upstream(
        {
            "type": "error",
            "error": {
                "type": "invalid_request_error",
                "code": "response_not_active",
                "message": f"Response is already complete: {RID}",
            },
        }
    )
    [error] = client_events(refused)
    assert error["error"]["code"] == "response_cancel_not_active", "OpenAI's code for it"
    assert error["error"]["message"] == "Cancellation failed: no active response found"
    out = done(sc)
    assert sent_kinds(out) == ["playback.ack", *[APPEND] * 5, COMMIT, CREATE]
    assert released(turn, out) == list(range(5))


def test_the_proxys_cut_ends_the_answer_upstream_with_a_clear() -> None:
    """A truncate of the answer still generated: the proxy cuts it (what was heard,
    then output_audio_buffer.clear, which the upstream honours whether it is still
    generating the answer or has just finished: shim/dialects/relay_cut.py), and the
    upstream's answer to it is kept from the client."""
    sc = make()
    pressed_over(sc)
    out = truncate(sc, 250)
    kinds = sent_kinds(out)
    assert kinds[:2] == ["playback.ack", "output_audio_buffer.clear"], kinds
    assert set(acks(out)) == {250}, "what was heard, never more"
    assert upstream_events(out)[1]["response_id"] == RID
    turn, out = burst(sc, [SPEECH] * 5)
    out += commit_and_create(sc)
    assert sent_kinds(out) == [*[APPEND] * 5, COMMIT, CREATE], "cut: the turn is free"
    assert released(turn, out) == list(range(5))
    answer = sc.upstream({"type": "output_audio_buffer.cleared", "response_id": RID})
    assert client_events(answer) == [], "the answer to the proxy's own clear"


def truncated_once_generated(truncates: bool) -> None:
    sc = make(truncates=truncates)
    first_turn(sc)
    detection(sc, on=False)
    generating(sc)
    done(sc)
    out = truncate(sc, 250)
    kinds = sent_kinds(out)
    # The truncate commits what was heard (the upstream's own, or the proxy's ack);
    # the rest of the answer would still play to it: its playback is stopped.
    assert kinds[-2:] == ["playback.ack", "output_audio_buffer.clear"], kinds
    assert acks(out) == [250]
    turn, out = burst(sc, [SPEECH] * 5)
    out += commit_and_create(sc)
    for _ in range(40):
        out += sc.tick(50)
    assert sent_kinds(out) == [*[APPEND] * 5, COMMIT, CREATE], "no ack of more than heard"
    assert released(turn, out) == list(range(5))


def test_a_truncate_of_a_generated_answer_stops_its_playback_upstream() -> None:
    truncated_once_generated(truncates=False)


def test_a_truncate_relayed_to_an_upstream_that_truncates_stops_its_playback_too() -> None:
    truncated_once_generated(truncates=True)


def test_under_server_vad_a_commit_over_an_answer_generated_does_not_wait() -> None:
    """Only push-to-talk waits: under server VAD the barge-in decision owns the
    answer's end (``relay_turn_end.py``)."""
    sc = make()
    first_turn(sc)
    generating(sc)
    assert sent_kinds(sc.client({"type": COMMIT})) == [COMMIT]


def test_server_vad_turned_on_while_a_commit_waits_keeps_the_push_to_talk_turn_whole() -> None:
    """The commit was made under push-to-talk: it goes as made then (the answer acked in
    full, every held chunk), whatever turn detection the client switched to meanwhile."""
    sc = make()
    pressed_over(sc)
    turn, out = burst(sc, [SPEECH] * 10)
    out += commit_and_create(sc)
    detection(sc, on=True)
    out = done(sc)
    assert acks(out) == [1000]
    assert released(turn, out) == list(range(10))
    assert sent_kinds(out).index(COMMIT) > max(
        i for i, kind in enumerate(sent_kinds(out)) if kind == APPEND
    )
