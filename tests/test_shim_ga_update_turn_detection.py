"""A GA client's ``session.update`` names ``turn_detection`` to the upstream only when
the upstream's turn detection changes (``shim/dialects/ga_session_update.py``).

vLLM-Omni 0.30.0 builds a fresh detector on every update that names turn detection
(``engine/duplex/turn_detection.py``, ``PendingTurnDetectionUpdate``: the one it
replaces is reset), so speech it was hearing is lost and its VAD clock restarts. What
a fresh upstream session gets, after a loss or a move, still states it in full."""

from __future__ import annotations

from typing import Any

from shim.dialects.ga_relay import GaRelaySession
from shim.inputs import UpstreamLost
from shim.snapshot import opening_session
from tests.shim_ga_relay_script import SERVER_VAD, make
from tests.shim_script import Script, upstream_events


def update(sc: Script, session: dict[str, Any]) -> dict[str, Any]:
    """The session object the upstream gets for the client's update."""
    out = sc.client({"type": "session.update", "session": {"type": "realtime", **session}})
    [sent] = [e for e in upstream_events(out) if e["type"] == "session.update"]
    return dict(sent["session"])


def vad(**fields: Any) -> dict[str, Any]:
    return {"audio": {"input": {"turn_detection": {"type": "server_vad", **fields}}}}


def test_an_instructions_only_update_leaves_the_upstreams_vad_running() -> None:
    sc = make()
    sent = update(sc, {"instructions": "be brief"})
    assert sent["instructions"] == "be brief"
    assert "turn_detection" not in sent, sent


def test_restating_the_same_turn_detection_leaves_it_running_too() -> None:
    sc = make()
    # The session's values as they stand, and semantic_vad's auto (500 ms of silence):
    # what the upstream would get is what it has.
    assert "turn_detection" not in update(sc, vad(threshold=0.5))
    semantic = {"audio": {"input": {"turn_detection": {"type": "semantic_vad"}}}}
    assert "turn_detection" not in update(sc, semantic)


def test_a_changed_turn_detection_goes_up_once() -> None:
    sc = make()
    assert update(sc, vad(threshold=0.7))["turn_detection"] == {**SERVER_VAD, "threshold": 0.7}
    assert "turn_detection" not in update(sc, vad(threshold=0.7))
    assert "turn_detection" not in update(sc, {"instructions": "be brief"})
    off = {"audio": {"input": {"turn_detection": None}}}
    assert update(sc, off)["turn_detection"] is None
    assert "turn_detection" not in update(sc, off)
    assert update(sc, vad())["turn_detection"] == SERVER_VAD


def test_a_fresh_upstream_after_a_loss_gets_the_turn_detection_back() -> None:
    sc = make()
    update(sc, vad(threshold=0.7))
    update(sc, {"instructions": "be brief"})  # names no turn detection upstream
    out = sc.s.handle(UpstreamLost("resume refused", sc.now, resume=False))
    [restore] = upstream_events(out)
    assert restore["session"]["instructions"] == "be brief"
    assert restore["session"]["turn_detection"] == {**SERVER_VAD, "threshold": 0.7}


def test_a_move_opens_the_fresh_upstream_with_it_too() -> None:
    sc = make()
    update(sc, vad(threshold=0.7))
    update(sc, {"instructions": "be brief"})
    assert isinstance(sc.s, GaRelaySession)
    opening = opening_session(sc.s.snapshot())
    assert opening is not None and opening["instructions"] == "be brief"
    assert opening["turn_detection"] == {**SERVER_VAD, "threshold": 0.7}
