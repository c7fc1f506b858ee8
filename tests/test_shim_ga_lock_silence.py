"""The silence level a GA relay judges the client's appends by, for whether a duplex
upstream has fixed the instructions (``shim/dialects/relay_upstream_audio.py``): the
one the upstream session reports, else the route's ``extra_body`` one at the opening
(``engine/duplex/config.py``, ``from_event`` reads it last), carried by a move."""

from __future__ import annotations

from tests.shim_ga_instructions_lock import RESUMED, changes, make_with, moved, quiet_turn, update


def test_the_clients_silence_level_survives_a_move() -> None:
    sc = make_with(chunk_period_ms=80)
    update(sc, {"instructions": "be kind", "overlap_silence_rms": 0.05})
    for resumed in (RESUMED, None):
        m = moved(sc, resumed)
        quiet_turn(m, 0.02)  # under 0.05: the upstream drops it, its buffer stays empty
        assert changes(m, "again"), f"resumed={resumed is not None}"


def test_the_routes_extra_body_silence_level_is_read_at_the_opening() -> None:
    sc = make_with()
    sc.s.upstream_audio.stated({"extra_body": {"overlap_silence_rms": 0.02}}, opening=True)
    update(sc, {"instructions": "be kind"})
    quiet_turn(sc, 0.01)
    assert changes(sc, "again")


def test_a_live_update_reads_the_flat_level_only() -> None:
    sc = make_with()
    update(sc, {"instructions": "be kind", "extra_body": {"overlap_silence_rms": 0.02}})
    quiet_turn(sc, 0.01)  # apply_realtime_update left 0.003: this is speech
    assert not changes(sc, "again")


def test_the_level_the_upstream_reports_wins() -> None:
    sc = make_with()
    sc.s.upstream_audio.stated({"overlap_silence_rms": 0.001}, opening=True)
    sc.s.bind_upstream(
        {"type": "session.created", "session": {"id": "up", "overlap_silence_rms": 0.02}}
    )
    sc.s.upstream_audio.stated({"overlap_silence_rms": 0.001}, opening=True)
    update(sc, {"instructions": "be kind"})
    quiet_turn(sc, 0.01)
    assert changes(sc, "again")
