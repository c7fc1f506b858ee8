"""A fresh upstream session of the barge-in relay gets every setting the client's
updates gave the one before, not only the last update's (``shim/dialects/
relay_kept_update.py``): vLLM-Omni applies each update over the session it has
(``engine/duplex/config.py``, ``apply_realtime_update``), so after a lost upstream or a
move to another replica the new one is given them all, folded into one update. Read by
the wheel's own code: tests/test_shim_relay_kept_wheel.py; the folding itself:
tests/test_shim_relay_kept_fold.py.
"""

from __future__ import annotations

from shim import snapshot
from shim.dialects.duplex_relay import BargeInRelaySession
from tests.duplex_relay_script import make
from tests.relay_kept_updates import VAD, lost, updated
from tests.shim_ga_relay_script import make as make_ga


def test_a_fresh_upstream_gets_the_settings_of_every_update() -> None:
    sc = make()
    updated(
        sc,
        {"instructions": "Be brief.", "turn_detection": VAD, "extra_body": {"a": 1}},
        {"voice": "alloy", "extra_body": {"b": 2}},
        {"tools": [], "instructions": None},
        {"instructions": "Be kind."},
    )
    session = lost(sc)
    assert session["instructions"] == "Be kind."
    assert session["voice"] == "alloy"
    assert session["tools"] == []
    assert session["turn_detection"] == VAD
    assert session["extra_body"] == {"a": 1, "b": 2}  # merged into, as vLLM-Omni does


def test_an_update_naming_the_turn_detection_anywhere_replaces_it() -> None:
    sc = make()
    updated(
        sc,
        {"turn_detection": VAD, "overlap_policy": "barge_in_on_speech", "instructions": "x"},
        {"audio": {"input": {"turn_detection": None}}},
    )
    session = lost(sc)
    assert "turn_detection" not in session and "overlap_policy" not in session, session
    assert session["audio"]["input"]["turn_detection"] is None
    assert session["instructions"] == "x"


def test_a_move_opens_the_fresh_upstream_with_every_setting() -> None:
    """A replica that takes the session over opens its fresh upstream session with the
    snapshot's settings (``shim/snapshot.py``, ``opening_session``), and gives them
    again after a loss of its own."""
    sc = make()
    updated(sc, {"instructions": "Be brief.", "turn_detection": VAD}, {"voice": "alloy"})
    wire = sc.s.snapshot()
    opening = snapshot.opening_session(wire)
    assert opening is not None
    assert (opening["instructions"], opening["voice"]) == ("Be brief.", "alloy")
    assert opening["turn_detection"] == VAD
    taken = make(bound=False)
    assert isinstance(taken.s, BargeInRelaySession)
    taken.s.restore(wire)
    updated(taken, {"tools": []})
    session = lost(taken)
    assert (session["instructions"], session["voice"], session["tools"]) == (
        "Be brief.",
        "alloy",
        [],
    )


def test_a_ga_clients_fresh_upstream_gets_the_settings_of_every_update() -> None:
    sc = make_ga()
    updated(sc, {"type": "realtime", "instructions": "Be brief."})
    updated(sc, {"type": "realtime", "audio": {"output": {"voice": "alloy"}}})
    session = lost(sc)
    assert session["instructions"] == "Be brief."
    assert session["audio"]["output"]["voice"] == "alloy"
    assert session["turn_detection"]["type"] == "server_vad"
