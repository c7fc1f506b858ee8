"""The silence level of a fresh upstream session after a loss: it opens with the
route's settings (``proxy/emulated/upstream_dial.py``), so its ``session.created``
reports the route's level, then the client's kept settings go to it as a
``session.update`` whose flat ``overlap_silence_rms`` vLLM-Omni applies
(``engine/duplex/config.py``, ``apply_realtime_update``): that level is the one it runs."""

from __future__ import annotations

from shim.inputs import UpstreamLost, UpstreamReattached
from tests.shim_ga_instructions_lock import changes, make_with, quiet_turn, update
from tests.shim_script import Script, upstream_events

FRESH_ROUTE_LEVEL = {
    "type": "session.created",
    "session": {"id": "up-2", "overlap_silence_rms": 0.003},  # the route's (vLLM-Omni default)
    "resume_token": "tok-2",
}


def _lost(sc: Script) -> list[dict[str, object]]:
    out = sc.s.handle(UpstreamLost("resume refused", sc.now, resume=False))
    return [e for e in upstream_events(out) if e["type"] == "session.update"]


def test_the_clients_kept_level_runs_on_a_fresh_session() -> None:
    sc = make_with(chunk_period_ms=80)
    update(sc, {"instructions": "be kind", "overlap_silence_rms": 0.05})
    [restore] = _lost(sc)
    assert restore["session"].get("overlap_silence_rms") == 0.05  # the fresh session gets it
    sc.s.handle(UpstreamReattached(FRESH_ROUTE_LEVEL, sc.now))
    quiet_turn(sc, 0.02)  # under 0.05: vLLM-Omni drops it; commit finds an empty buffer
    assert changes(sc, "again")


def test_an_update_while_the_fresh_session_is_dialled_runs_last() -> None:
    sc = make_with(chunk_period_ms=80)
    update(sc, {"instructions": "be kind", "overlap_silence_rms": 0.001})
    _lost(sc)
    update(sc, {"overlap_silence_rms": 0.05})  # held by the edge, given after the kept one
    sc.s.handle(UpstreamReattached(FRESH_ROUTE_LEVEL, sc.now))
    quiet_turn(sc, 0.02)  # under 0.05: dropped, nothing to answer
    assert changes(sc, "again")


def test_a_fresh_session_without_a_kept_level_runs_the_routes() -> None:
    sc = make_with(chunk_period_ms=80)
    update(sc, {"instructions": "be kind"})
    _lost(sc)
    sc.s.handle(UpstreamReattached(FRESH_ROUTE_LEVEL, sc.now))
    quiet_turn(sc, 0.02)
    assert not changes(sc, "again")
