"""GA's idle timeout runs from the end of the answer's playback (``response.done`` plus
its duration): here, once the clock estimate passes the answer's end or the client's
acks reach it, whichever comes first (``shim/playback.py``, ``played_out``). Acks
alone could hold it off for good: a client acks whole ms, so an answer of 1000.5 ms
acked as 1000 never "ended", and one that acks once mid-answer never again.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from shim import played_snapshot, snapshot_clock
from shim.dialects.turn_based import TurnBasedSession
from shim.inputs import ClientPresence
from shim.session import ShimSettings
from tests.shim_idle_script import QUIET, SID, SILENCE, SPEECH, odd_answer, turn_based, wait
from tests.shim_script import Script, client_events, pcm_b64, types


def ack(item_id: str, played_ms: int) -> dict[str, Any]:
    return {"type": "playback.ack", "item_id": item_id, "played_ms": played_ms}


def test_an_answer_acked_in_whole_ms_to_its_end_still_starts_the_timer() -> None:
    sc = turn_based(5000)
    item_id = odd_answer(sc)
    sc.client(ack(item_id, 1000))  # all of it, in whole ms
    out = wait(sc, 20_000, 960)
    assert types(out).count("input_audio_buffer.timeout_triggered") == 1


def test_an_answer_acked_once_mid_way_ends_by_the_clock() -> None:
    sc = turn_based(5000)
    item_id = odd_answer(sc)
    sc.client(ack(item_id, 200))
    out = wait(sc, 30_000, 960)
    assert types(out).count("input_audio_buffer.timeout_triggered") == 1


def test_an_ack_never_holds_the_edge_s_ticks_for_good() -> None:
    sc = turn_based(5000)
    item_id = odd_answer(sc)
    sc.client(ack(item_id, 500))
    assert sc.s.wants_ticks(sc.now), "the answer is still playing by the clock"
    assert not sc.s.wants_ticks(sc.now + 3_600_000), "an hour on, time changes nothing"
    # What the barge-in and truncation read is still the client's word.
    item = sc.s.ledger.get(item_id)
    assert item is not None and item.audio_end_ms(sc.now + 3_600_000) == 500
    assert sc.s.output.active(sc.now + 3_600_000)


def test_acks_that_reach_the_end_before_the_clock_start_it_at_once() -> None:
    sc = turn_based(5000)
    item_id = odd_answer(sc)
    sc.client(ack(item_id, 1001))
    out = wait(sc, 6_720, 960)  # acked: due at 8160 ms; by the clock alone not before 9120
    assert "input_audio_buffer.timeout_triggered" in types(out)
    (told,) = [e for e in client_events(out) if e["type"] == "input_audio_buffer.timeout_triggered"]
    assert told["audio_end_ms"] > told["audio_start_ms"]


def moved(
    sc: Script, *, clock_shift_ms: float = 0.0, stored: bool = True, wall_error_ms: float = 0.0
) -> Script:
    """``sc``'s session taken over by another replica whose edge clock reads
    ``clock_shift_ms`` more at the same instant, through the store (its times on the wall
    clock, ``shim/snapshot_clock.py``) as ``proxy/resume/from_store.py`` restores it;
    the first replica's wall clock ``wall_error_ms`` off the second's."""
    wall_offset = 1.7e12  # wall minus the first replica's edge clock
    snap = snapshot_clock.to_wall(sc.s.snapshot(), wall_offset + wall_error_ms)
    if not stored:  # written before its times were carried
        snap = {k: v for k, v in snap.items() if k not in ("clock", "idle")}
        for entry in snap.get("played", ()):
            entry.pop("play_end_ms", None)
    snap = orjson.loads(orjson.dumps(snap))
    snap = snapshot_clock.from_wall(snap, wall_offset - clock_shift_ms, sc.now + clock_shift_ms)
    other = Script(TurnBasedSession(SID, "demo", "demo-up", ShimSettings()))
    played_snapshot.restore(other.s.ledger, snap)
    other.s.restore(snap)
    other.now = sc.now + clock_shift_ms
    return other


def long_answer(sc: Script, audio_ms: int) -> None:
    out = sc.speak(QUIET + SPEECH + SILENCE)
    assert "response.created" in types(out)
    for _ in range(audio_ms // 100):  # generated at once: the client plays it for long
        sc.upstream({"type": "response.output_audio.delta", "audio": pcm_b64(100, 24000)})
    sc.upstream({"type": "transcription.done", "text": "hello"})
    sc.upstream({"type": "response.output_audio.done"})


@pytest.mark.parametrize("shift", [0.0, -3.6e6, 5e8])
def test_after_a_move_the_timer_still_waits_for_the_answer_to_play_out(shift: float) -> None:
    sc = turn_based(5000)
    long_answer(sc, 20_000)
    sc.tick(1000)  # moved 1 s into the 20 s answer
    other = moved(sc, clock_shift_ms=shift)
    early = wait(other, 19_200, 960)  # the client still plays the answer all along
    stayed = wait(sc, 19_200, 960)  # the session that did not move
    assert "input_audio_buffer.timeout_triggered" not in types(stayed)
    assert "input_audio_buffer.timeout_triggered" not in types(early)
    assert types(wait(other, 6_720, 960)).count("input_audio_buffer.timeout_triggered") == 1


def test_a_move_mid_wait_goes_on_with_the_quiet_where_it_was() -> None:
    sc = turn_based(10_000)
    long_answer(sc, 1000)
    assert "input_audio_buffer.timeout_triggered" not in types(wait(sc, 7_680, 960))
    other = moved(sc, clock_shift_ms=-42_000.0)
    out = wait(other, 4_800, 960)  # the quiet began about 6.7 s before the move
    assert types(out).count("input_audio_buffer.timeout_triggered") == 1


def test_a_snapshot_stored_without_its_times_still_restores() -> None:
    sc = turn_based(5000)
    long_answer(sc, 20_000)
    sc.tick(1000)
    other = moved(sc, stored=False)
    item = other.s.ledger.latest()
    assert item is not None and item.sent_ms == 20_000 and not item.playing(other.now)
    assert item.restored_end_ms is None, "heard in full, long ago, as before"
    assert other.s.idle.since_ms is None
    out = wait(other, 6_720, 960)  # the timer starts afresh after the move
    assert types(out).count("input_audio_buffer.timeout_triggered") == 1


def test_no_timeout_while_no_client_is_attached_and_the_quiet_goes_on_when_one_is() -> None:
    sc = turn_based(5000)
    long_answer(sc, 1000)
    assert not types(wait(sc, 2_880, 960))  # the answer played out, the quiet began
    begun = sc.s.idle.since_ms
    assert begun is not None
    sc.s.handle(ClientPresence(False, sc.now))  # the client's connection dropped
    left, away_at = 5000 - (sc.now - begun), sc.now
    assert sc.s.due_at() is None, "no wakeup for a timeout while away"
    away = [a for _ in range(60) for a in sc.tick(1000)]
    assert "input_audio_buffer.timeout_triggered" not in types(away)
    snap = sc.s.snapshot()  # flushed as the client left: a resume elsewhere waits too
    other = moved(sc, clock_shift_ms=9e6)
    for back in (sc, other):
        back.s.handle(ClientPresence(True, back.now))
        assert back.s.due_at() == back.now + left
        out = wait(back, 4_800, 960)  # what was left of the 5 s, not all of it again
        assert types(out).count("input_audio_buffer.timeout_triggered") == 1
    assert snap["idle"]["away_ms"] == away_at


def test_a_snapshot_told_on_a_wall_clock_hours_ahead_still_ends_the_answer() -> None:
    # The writer's wall clock an hour ahead (NTP stepped it back after its offset was
    # taken): the answer's end reads an hour late. It ends at the latest when all of
    # its audio has played from the resume on, and the timeout fires then.
    sc = turn_based(5000)
    long_answer(sc, 20_000)
    sc.tick(1000)
    other = moved(sc, wall_error_ms=3.6e6)
    item = other.s.ledger.latest()
    assert item is not None and item.restored_end_ms is not None
    assert item.restored_end_ms <= other.now + 20_000, "an hour of waiting for nothing"
    out = wait(other, 20_000 + 6_720, 960)
    assert types(out).count("input_audio_buffer.timeout_triggered") == 1


def test_a_quiet_told_on_a_wall_clock_hours_ahead_is_not_waited_for_hours() -> None:
    sc = turn_based(10_000)
    long_answer(sc, 1000)
    assert "input_audio_buffer.timeout_triggered" not in types(wait(sc, 7_680, 960))
    other = moved(sc, wall_error_ms=3.6e6)
    # The quiet begins at the latest once the answer (its end read an hour late too)
    # has played from the move on: its 1 s, and the timeout.
    out = wait(other, 1000 + 10_000 + 1920, 960)
    assert types(out).count("input_audio_buffer.timeout_triggered") == 1


def test_no_time_restored_later_than_it_can_mean() -> None:
    now, wall = 50_000.0, 1.7e12
    stored = {
        "clock": dict(snapshot_clock.WALL),
        "played": [{"sent_samples": 48_000, "rate_hz": 24_000, "play_end_ms": wall + 4e6}],
        "idle": {"v": 1, "since_ms": wall + 4e6, "away_ms": wall + 4e6},
    }
    snap = snapshot_clock.from_wall(stored, wall, now)
    assert snap["played"][0]["play_end_ms"] == now + 2000, "its 2 s played from now on"
    assert (snap["idle"]["since_ms"], snap["idle"]["away_ms"]) == (now, now)
    early = stored | {"idle": {"v": 1, "since_ms": wall + 1000, "away_ms": None}}
    assert snapshot_clock.from_wall(early, wall, now)["idle"]["since_ms"] == 1000
