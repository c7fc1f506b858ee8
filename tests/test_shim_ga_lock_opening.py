"""A GA client's own first ``session.update`` opens the duplex upstream session
(``proxy/handshake/open_upstream.py``: ``shim/ga_upstream.py`` ``opening_session``,
the client's fields over the route's), so what it opens with decides whether the
upstream has fixed the instructions (``shim/dialects/ga_session_update.py``,
``opened``): its ``extra_body.auto_response`` and its ``initial_user_text``."""

from __future__ import annotations

from typing import Any

from shim.dialects import ga_session_update
from tests.shim_ga_instructions_lock import changes, make_with
from tests.shim_script import Script


def _opened(caps: dict[str, Any], session: dict[str, Any], route: dict[str, Any]) -> Script:
    sc = make_with(**caps)
    sc.s.upstream_audio.stated(route, opening=True)  # proxy/emulated/shim_setup.py
    ev = {"type": "session.update", "session": {"type": "realtime", **session}}
    ga_session_update.opened(sc.s, ev)  # as the edge applies the opening
    return sc


def test_the_openings_auto_response_counts() -> None:
    opening = {"instructions": "be kind", "extra_body": {"auto_response": True}}
    sc = _opened({"chunk_period_ms": 80}, opening, {})
    sc.audio(200, amplitude=0)  # auto-responding: a whole chunk buffered is answered
    assert not changes(sc, "again")


def test_the_openings_seed_counts() -> None:
    opening = {"instructions": "triage", "initial_user_text": "Greet the caller."}
    sc = _opened({"supports_text_only_turn": True}, opening, {})
    sc.client({"type": "response.create"})  # the upstream answers the seed
    assert not changes(sc, "again")


def test_an_empty_seed_over_the_routes_leaves_nothing_to_answer() -> None:
    opening = {"instructions": "t", "initial_user_text": ""}
    sc = _opened({"supports_text_only_turn": True}, opening, {"initial_user_text": "Greet."})
    sc.client({"type": "response.create"})  # response_create_without_input upstream
    assert changes(sc, "again")


def test_the_clients_seed_replaces_the_routes() -> None:
    opening = {"instructions": "t", "initial_user_text": "Hello."}
    sc = _opened({"supports_text_only_turn": True}, opening, {"initial_user_text": "Greet."})
    assert sc.s.upstream_audio.lock.items == 1  # one seed, the client's
    assert sc.s.upstream_audio.lock.seed == "Hello."


def test_a_refused_opening_states_nothing() -> None:
    opening = {"instructions": "t", "initial_user_text": "Hi.", "output_modalities": ["video"]}
    sc = _opened({"supports_text_only_turn": True}, opening, {})
    sc.client({"type": "response.create"})  # the upstream opened as the route's: no seed
    assert changes(sc, "again")
