"""The playback ledger: played position, truncation point, heard transcript."""

from __future__ import annotations

from shim.playback import ItemPlayback, PlaybackLedger

RATE = 24000


def test_played_is_wall_time_since_first_delta_capped_by_audio_sent() -> None:
    item = ItemPlayback("i", "r", RATE)
    item.add_audio(RATE, now_ms=1000)  # 1 s of audio at t=1000
    assert item.played_ms(1400) == 400
    assert item.played_ms(5000) == 1000  # never beyond what was sent
    assert item.audio_end_ms(1400.7) == 400


def test_a_pause_in_sending_is_not_counted_as_played() -> None:
    item = ItemPlayback("i", "r", RATE)
    item.add_audio(RATE // 2, now_ms=0)  # 500 ms
    item.add_audio(RATE // 2, now_ms=2000)  # sent after a 1.5 s gap
    assert item.played_ms(2100) == 600
    assert item.playing(2100)
    assert not item.playing(2600)


def test_client_acks_win_over_the_estimate_and_never_exceed_sent() -> None:
    item = ItemPlayback("i", "r", RATE)
    item.add_audio(RATE, now_ms=0)
    item.ack(250)
    assert item.played_ms(900) == 250
    item.ack(5000)
    assert item.played_ms(900) == 1000


def test_heard_transcript_follows_where_text_arrived_in_the_audio() -> None:
    item = ItemPlayback("i", "r", RATE)
    for word in ("one ", "two ", "three ", "four"):
        item.add_text(word)
        item.add_audio(RATE // 4, now_ms=0)
    assert item.heard_transcript(10) == "one"
    assert item.heard_transcript(300) == "one two"
    assert item.heard_transcript(1000) == "one two three four"
    assert item.heard_transcript(0) == ""


def test_heard_transcript_by_time_share_when_text_came_in_one_burst() -> None:
    item = ItemPlayback("i", "r", RATE)
    item.add_text("alpha beta gamma delta")
    item.add_audio(RATE, now_ms=0)
    assert item.heard_transcript(500) == "alpha beta"


def test_ledger_is_bounded_and_knows_what_is_playing() -> None:
    ledger = PlaybackLedger(max_items=2)
    for n in range(3):
        ledger.start(f"i{n}", f"r{n}", RATE).add_audio(RATE, now_ms=0)
    assert ledger.get("i0") is None
    assert [i.item_id for i in ledger.items()] == ["i1", "i2"]
    assert ledger.playing(500) is not None
    assert ledger.playing(2000) is None
