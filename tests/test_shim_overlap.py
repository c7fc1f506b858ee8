"""The barge-in state table: transitions as data, and when the client is told."""

from __future__ import annotations

import pytest

from shim.overlap import (
    TELL_PAUSED,
    TELL_RESUMED,
    TELL_SPEECH_STARTED,
    TRANSITIONS,
    Cue,
    Episode,
    Overlap,
    OverlapError,
    OverlapMachine,
)


def holding() -> OverlapMachine:
    m = OverlapMachine()
    step = m.begin(Episode("item_1", onset_ms=100))
    assert step.outcome is Overlap.HOLDING and m.holding
    assert not step.tell_started, "a GA client hears nothing while the overlap is undecided"
    assert step.tell_paused, "a client that opted in hears that the audio paused"
    return m


@pytest.mark.parametrize(
    ("cue", "outcome", "told", "resumed"),
    [
        (Cue.BARGE_IN, Overlap.CUT, True, False),
        (Cue.NOT_AN_INTERRUPTION, Overlap.RELEASED, False, True),
        (Cue.SPEECH_STOPPED, Overlap.RELEASED, False, True),
        (Cue.HOLD_TOO_LONG, Overlap.RELEASED, False, True),
        (Cue.ASSISTANT_FINISHED, Overlap.TURN, True, False),
        (Cue.INPUT_CLEARED, Overlap.QUIET, False, True),
    ],
)
def test_each_way_an_overlap_ends_leaves_the_machine_quiet(
    cue: Cue, outcome: Overlap, told: bool, resumed: bool
) -> None:
    m = holding()
    step = m.decide(cue)
    assert step.outcome is outcome
    assert step.episode.item_id == "item_1"
    assert step.tell_started is told, "speech_started only for a barge-in or the next turn"
    assert step.episode.told is told
    assert step.tell_resumed is resumed and not step.tell_paused
    assert m.state is Overlap.QUIET and m.episode is None and not m.holding


def test_a_cue_with_no_transition_is_refused() -> None:
    m = OverlapMachine()
    with pytest.raises(OverlapError, match="with no overlap"):
        m.decide(Cue.BARGE_IN)
    assert m.state is Overlap.QUIET and m.episode is None


def test_a_fresh_start_while_holding_replaces_the_episode_untold_and_unpaused() -> None:
    m = holding()
    step = m.begin(Episode("item_2", onset_ms=900))
    assert not step.tell_started and not step.tell_paused, "the audio is paused already"
    assert m.episode is not None and m.episode.item_id == "item_2"
    assert m.decide(Cue.BARGE_IN).episode.item_id == "item_2"


def test_the_table_is_closed_and_tells_only_on_its_own_transitions() -> None:
    assert set(TRANSITIONS) == set(Overlap)
    for targets in TRANSITIONS.values():
        assert set(targets.values()) <= set(Overlap)
    for state, cue in TELL_SPEECH_STARTED | TELL_PAUSED | TELL_RESUMED:
        assert cue in TRANSITIONS[state]
    # Outcomes have no transitions of their own: the machine is QUIET after them.
    assert not TRANSITIONS[Overlap.CUT] and not TRANSITIONS[Overlap.RELEASED]
    # Nothing a GA client reads as "interrupt" before the decision.
    assert all(cue in (Cue.BARGE_IN, Cue.ASSISTANT_FINISHED) for _, cue in TELL_SPEECH_STARTED)
