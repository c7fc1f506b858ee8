"""Which cuts and which audio decide a GA client's voice over a duplex upstream
(``shim/dialects/relay_context_lock.py``), as vLLM-Omni 0.30.0 decides it: its
``audio_started`` is the current response's playback having audio
(``engine/duplex/session/control.py``), a cursor that every cut replaces with an empty
one (``engine_session.py``, ``clear_playback_cursor``), its own server-VAD barge-in's
included, while audio of an answer a newer one replaced goes on that answer's cursor
(``_mark_draining_audio_sent``) and a clear or cancel naming such an answer cuts
nothing (``realtime_events.py``: ``resolve_clear_output_audio``,
``resolve_cancel_response``; ``session/runner.py``, ``_on_cancel``)."""

from __future__ import annotations

from typing import Any

import orjson

from tests.shim_ga_relay_script import RID, answer, answer_delta, make
from tests.shim_ga_resumable import UP, ga
from tests.shim_ga_resumable import make as make_unbound
from tests.shim_ga_voice_updates import changed_voice, update, voiced


def _done(rid: str, status: str = "completed", reason: str = "stop") -> dict[str, Any]:
    details = {"type": status, "reason": reason}
    return {
        "type": "response.done",
        "response": {"id": rid, "status": status, "status_details": details},
    }


def _second_answer(sc: Any) -> None:
    """``RID`` done, then ``resp_2`` with audio."""
    sc.upstream(_done(RID))
    sc.upstream({"type": "response.created", "response": {"id": "resp_2"}})
    sc.upstream({**answer_delta(sample_rate_hz=24000), "response_id": "resp_2"})


def test_the_upstreams_own_barge_in_frees_the_voice() -> None:
    """Server VAD's barge-in (``runner.py``, ``_barge_in_for_overlap``) clears the
    playback cursor; the client sees the answer's ``response.done`` cancelled."""
    sc = make()
    update(sc, voiced("ash"))
    answer(sc)
    assert not changed_voice(sc, "verse")
    sc.upstream(_done(RID, "cancelled", "turn_detected"))
    assert changed_voice(sc, "verse")


def test_a_barge_in_on_a_finished_answer_still_playing_frees_the_voice() -> None:
    """Its playback cut after generation: ``output_audio_buffer.cleared`` naming it."""
    sc = make()
    update(sc, voiced("ash"))
    answer(sc)
    sc.upstream(_done(RID))
    assert not changed_voice(sc, "verse")
    sc.upstream({"type": "output_audio_buffer.cleared", "response_id": RID})
    assert changed_voice(sc, "verse")


def test_audio_of_the_answer_a_newer_one_replaced_does_not_fix_the_voice() -> None:
    """A model overlapping turns (aura_omni) drains the last answer's speech while the
    next begins; that audio goes on the last answer's own cursor."""
    sc = make()
    update(sc, voiced("ash"))
    answer(sc)
    sc.upstream({"type": "response.created", "response": {"id": "resp_2"}})
    assert changed_voice(sc, "verse")
    sc.upstream(answer_delta(sample_rate_hz=24000))  # RID's, draining
    assert changed_voice(sc, "sage")
    sc.upstream({**answer_delta(sample_rate_hz=24000), "response_id": "resp_2"})
    assert not changed_voice(sc, "alloy")


def test_the_end_of_the_answer_a_newer_one_replaced_leaves_the_newer_one_live() -> None:
    sc = make()
    update(sc, voiced("ash"))
    answer(sc)
    sc.upstream({"type": "response.created", "response": {"id": "resp_2"}})
    sc.upstream(_done(RID))  # the replaced answer's end, after the next one began
    sc.upstream({**answer_delta(sample_rate_hz=24000), "response_id": "resp_2"})
    assert not changed_voice(sc, "verse")
    sc.client({"type": "response.cancel"})  # resp_2 is in progress: cut
    assert changed_voice(sc, "verse")


def test_a_clear_naming_a_replaced_answer_leaves_the_voice_fixed() -> None:
    sc = make()
    update(sc, voiced("ash"))
    answer(sc)
    _second_answer(sc)
    assert not changed_voice(sc, "verse")
    sc.client({"type": "output_audio_buffer.clear", "response_id": RID})
    sc.upstream({"type": "output_audio_buffer.cleared", "response_id": RID})
    assert not changed_voice(sc, "verse")  # answered cleared, nothing cut
    sc.client({"type": "output_audio_buffer.clear", "response_id": "resp_2"})
    assert changed_voice(sc, "verse")


def test_a_cancel_naming_an_answer_not_active_leaves_the_voice_fixed() -> None:
    sc = make()
    update(sc, voiced("ash"))
    answer(sc)
    _second_answer(sc)
    sc.client({"type": "response.cancel", "response_id": RID})  # response_not_active
    assert not changed_voice(sc, "verse")
    sc.client({"type": "response.cancel", "response_id": "resp_2"})
    assert changed_voice(sc, "verse")


def _moved(sc: Any) -> Any:
    """The session moved to another replica, its upstream session resumed there."""
    snap = orjson.loads(orjson.dumps(sc.s.snapshot()))
    moved = make_unbound(bound=False)
    resumed = {"type": "session.resumed", "session_id": UP, "resume_token": "tok-2"}
    ga(moved).restore(snap, resumed, now=sc.now)
    return moved


def test_a_cancel_just_after_a_move_mid_answer_frees_the_voice() -> None:
    sc = make()
    update(sc, voiced("ash"))
    answer(sc)  # in progress, with audio
    moved = _moved(sc)
    assert not changed_voice(moved, "verse")
    moved.client({"type": "response.cancel"})
    assert changed_voice(moved, "verse")


def test_a_move_keeps_which_answer_is_the_current_one() -> None:
    sc = make()
    update(sc, voiced("ash"))
    answer(sc)
    _second_answer(sc)
    moved = _moved(sc)
    moved.client({"type": "output_audio_buffer.clear", "response_id": RID})
    assert not changed_voice(moved, "verse")  # the replaced answer's: nothing cut
    moved.upstream(answer_delta(sample_rate_hz=24000))  # and its audio is not resp_2's
    moved.client({"type": "output_audio_buffer.clear", "response_id": "resp_2"})
    assert changed_voice(moved, "verse")
