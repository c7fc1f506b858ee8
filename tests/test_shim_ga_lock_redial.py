"""A fresh upstream session after a loss opens with the route's settings alone
(``proxy/emulated/upstream_dial.py``: ``opening_update(route, model, None)``), then
gets the client's kept settings as a ``session.update``, which carries no
``initial_user_text`` (vLLM-Omni's update leaves it anyway: ``engine/duplex/config.py``).
So its lock counts the route's seed, not the one the client's opening stated."""

from __future__ import annotations

from shim.dialects import ga_session_update
from shim.inputs import UpstreamLost, UpstreamReattached
from tests.shim_ga_instructions_lock import FRESH, changes, make_with
from tests.shim_script import upstream_events


def _opened(session, route):
    sc = make_with(supports_text_only_turn=True)
    sc.s.upstream_audio.stated(route, opening=True)  # proxy/emulated/shim_setup.py new_shim
    ga_session_update.opened(
        sc.s, {"type": "session.update", "session": {"type": "realtime", **session}}
    )
    return sc


def _fresh_after_loss(sc):
    out = sc.s.handle(UpstreamLost("resume refused", sc.now, resume=False))
    restored = [e for e in upstream_events(out) if e["type"] == "session.update"]
    # What the fresh session is given after the route's opening: no initial_user_text.
    assert all("initial_user_text" not in e["session"] for e in restored), restored
    sc.s.handle(UpstreamReattached(FRESH, sc.now))


def test_clients_seed_counted_on_fresh_session_that_lacks_it() -> None:
    sc = _opened({"instructions": "triage", "initial_user_text": "Greet the caller."}, {})
    _fresh_after_loss(sc)
    # Fresh upstream opened with the route's (no seed): response.create is refused
    # (response_create_without_input), nothing locks; a handoff's new instructions are taken.
    sc.client({"type": "response.create"})
    assert changes(sc, "handoff"), (
        "proxy refuses instructions_update_unsupported; vLLM-Omni accepts"
    )


def test_routes_seed_missed_on_fresh_session_after_clients_empty_one() -> None:
    sc = _opened({"instructions": "t", "initial_user_text": ""}, {"initial_user_text": "Greet."})
    _fresh_after_loss(sc)
    # Fresh upstream opened with the route's seed "Greet.": response.create answers it, locks.
    sc.client({"type": "response.create"})
    assert not changes(sc, "handoff"), "proxy says session.updated; vLLM-Omni refuses"
