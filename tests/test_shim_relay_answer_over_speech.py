"""barge_in_emulated: an upstream answer that begins while the user is still speaking.

The upstream takes turns by its own VAD and may commit a pause in a slow barge-in
("Wait, stop, ... I have a question") as the whole turn, then answer at once, while
the proxy's VAD still hears the user. Such an answer must not play over the user:
it is held, cut if the user goes on (the rest of the sentence a turn of its own,
nothing of it lost), and played in full if the user stops.
"""

from __future__ import annotations

from typing import Any

import pytest

from shim.actions import SendClientAudio
from tests.shim_ga_relay_script import answer, make
from tests.shim_script import Script, client_events, pcm_b64, types, upstream_events

RID2 = "resp-duplex-1-1-abcd1235"
AID2 = f"item_{RID2}"
UP_ITEM = "item_up_first_part"


def delta2() -> dict[str, Any]:
    return {
        "type": "response.output_audio.delta",
        "response_id": RID2,
        "item_id": AID2,
        "output_index": 0,
        "content_index": 0,
        "delta": pcm_b64(100, 24000),
        "sample_rate_hz": 24000,
    }


def barge_in_then_early_answer(sc: Script, dip: bool = False) -> tuple[list[Any], str]:
    """The user barges in over the answer; the upstream commits the first part of it
    and answers it at once: the proxy's VAD still hears the user (``dip``: in a pause
    of the voice shorter than the VAD's silence, the end of a turn as far as anyone can
    tell then: the answer plays until the voice comes back)."""
    sc.client({"type": "session.update", "session": {"type": "realtime"}})
    answer(sc, chunks=30)
    sc.tick(500)
    out = sc.speak([0.1] * 5 + [0.95] * 30)
    assert "output_audio_buffer.clear" in [e["type"] for e in upstream_events(out)]
    [told] = [e for e in client_events(out) if e["type"] == "input_audio_buffer.speech_started"]
    if dip:
        sc.speak([0.05] * 4)
    seq = 40  # after the first answer's (answer(): 10 .. 40)
    early: list[Any] = []
    for ev in (
        {"type": "input_audio_buffer.speech_stopped", "item_id": UP_ITEM, "audio_end_ms": 900},
        {"type": "input_audio_buffer.committed", "item_id": UP_ITEM},
        {"type": "response.created", "response": {"id": RID2}},
    ):
        seq += 1
        early += sc.upstream({**ev, "server_event_seq": seq})
    for _ in range(3):  # the answer streams while the user goes on speaking
        seq += 1
        early += sc.upstream({**delta2(), "server_event_seq": seq})
    early += sc.speak([0.95] * 2)
    if not dip:
        assert not answer2_audio(early), "held while the user speaks"
    return early, str(told["item_id"])


def answer2_audio(actions: list[Any]) -> list[Any]:
    return [a for a in actions if isinstance(a, SendClientAudio) and a.event["response_id"] == RID2]


@pytest.mark.parametrize("dip", [False, True])
def test_an_answer_begun_while_the_user_speaks_is_cut_if_the_user_goes_on(dip: bool) -> None:
    sc = make()
    early, first_turn = barge_in_then_early_answer(sc, dip)
    assert "input_audio_buffer.committed" in types(early), types(early)
    out = early + sc.speak([0.95] * 30)  # the rest of the sentence
    if not dip:
        assert not answer2_audio(out), "never a word of the answer over the user"
    done = [e for e in client_events(out) if e["type"] == "response.done"]
    assert [d["response"]["status"] for d in done] == ["cancelled"], done
    sent = upstream_events(out)
    kinds = [e["type"] for e in sent]
    assert {"type": "output_audio_buffer.clear", "response_id": RID2} in [
        {k: e[k] for k in ("type", "response_id") if k in e} for e in sent
    ], kinds
    cut = max(i for i, k in enumerate(kinds) if k == "output_audio_buffer.clear")
    assert "input_audio_buffer.append" in kinds[cut:], "the rest of the sentence goes upstream"
    # The rest is a turn of its own, told as GA tells one, after the first one's stop.
    started = [e for e in client_events(out) if e["type"] == "input_audio_buffer.speech_started"]
    stopped = [e for e in client_events(out) if e["type"] == "input_audio_buffer.speech_stopped"]
    assert len(started) == 1 and started[0]["item_id"] != first_turn, started
    assert started[0]["audio_start_ms"] >= stopped[0]["audio_end_ms"], (started, stopped)


def test_an_answer_begun_while_the_user_speaks_plays_in_full_once_the_user_stops() -> None:
    sc = make()
    early, _ = barge_in_then_early_answer(sc)
    out = sc.speak([0.05] * 30)
    for _ in range(20):
        out += sc.tick(50)
    assert "response.done" not in types(early + out), "not cut: the user stopped"
    assert len(answer2_audio(out)) == 3, "all of it, once the user stopped"
