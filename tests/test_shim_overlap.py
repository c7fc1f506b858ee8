"""The barge-in state table: transitions as data, and when the client is told."""

from __future__ import annotations

import pytest

from shim.overlap import (
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
    assert step.tell_started, "the client hears speech_started as the hold begins"
    return m


@pytest.mark.parametrize(
    ("cue", "outcome"),
    [
        (Cue.ENOUGH_SPEECH, Overlap.CUT),
        (Cue.SPEECH_STOPPED, Overlap.RELEASED),
        (Cue.HOLD_TOO_LONG, Overlap.RELEASED),
        (Cue.ASSISTANT_FINISHED, Overlap.TURN),
        (Cue.INPUT_CLEARED, Overlap.QUIET),
    ],
)
def test_each_way_an_overlap_ends_leaves_the_machine_quiet(cue: Cue, outcome: Overlap) -> None:
    m = holding()
    m.voiced(64)
    step = m.decide(cue)
    assert step.outcome is outcome
    assert step.episode.item_id == "item_1" and step.episode.voiced_ms == 64
    assert step.episode.told and not step.tell_started, "told once, at the start"
    assert m.state is Overlap.QUIET and m.episode is None and not m.holding


def test_a_cue_with_no_transition_is_refused() -> None:
    m = OverlapMachine()
    with pytest.raises(OverlapError, match="with no overlap"):
        m.decide(Cue.ENOUGH_SPEECH)
    m.voiced(32)  # no episode: nothing to count
    assert m.state is Overlap.QUIET and m.episode is None


def test_a_fresh_start_while_holding_replaces_the_episode_and_is_told() -> None:
    m = holding()
    step = m.begin(Episode("item_2", onset_ms=900))
    assert step.tell_started and m.episode is not None and m.episode.item_id == "item_2"
    assert m.decide(Cue.ENOUGH_SPEECH).episode.item_id == "item_2"


def test_the_table_is_closed_and_tells_only_on_its_own_transitions() -> None:
    assert set(TRANSITIONS) == set(Overlap)
    for targets in TRANSITIONS.values():
        assert set(targets.values()) <= set(Overlap)
    for state, cue in TELL_SPEECH_STARTED:
        assert cue in TRANSITIONS[state]
    # Outcomes have no transitions of their own: the machine is QUIET after them.
    assert not TRANSITIONS[Overlap.CUT] and not TRANSITIONS[Overlap.RELEASED]
