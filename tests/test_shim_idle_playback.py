"""GA's idle timeout runs from the end of the answer's playback (``response.done`` plus
its duration): here, once the clock estimate passes the answer's end or the client's
acks reach it, whichever comes first (``shim/playback.py``, ``played_out``). Acks
alone could hold it off for good: a client acks whole ms, so an answer of 1000.5 ms
acked as 1000 never "ended", and one that acks once mid-answer never again.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from shim.audio import b64encode
from tests.shim_script import Script, client_events, pcm_b64, types
from tests.test_shim_idle_timeout import QUIET, SILENCE, SPEECH, turn_based, wait


def odd_answer(sc: Script) -> str:
    """A turn answered with 1000.5 ms of 24 kHz audio (deltas of any size are legal);
    the answer's item id."""
    out = sc.speak(QUIET + SPEECH + SILENCE)
    assert "response.created" in types(out)
    for _ in range(10):
        sc.upstream({"type": "response.output_audio.delta", "audio": pcm_b64(100, 24000)})
    odd = b64encode((np.ones(12) * 500).astype("<i2").tobytes())  # 12 samples: 0.5 ms
    sc.upstream({"type": "response.output_audio.delta", "audio": odd})
    sc.upstream({"type": "transcription.done", "text": "hello"})
    sc.upstream({"type": "response.output_audio.done"})
    item = sc.s.ledger.latest()
    assert item is not None and item.sent_ms == 1000.5
    return item.item_id


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
