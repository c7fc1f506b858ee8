"""A fresh upstream opened after a move reads the kept settings as the lost one had
them. vLLM-Omni reads an opening otherwise than a live update: ``from_realtime`` hands
``from_event`` the overlap fields flat and ``extra_body`` as given, and ``from_event``
reads the overlap numbers from ``extra_body`` too (last), which ``apply_realtime_update``
leaves there unread (``engine/duplex/config.py``); the session's start then sets the
playback commit policy to ``ack_only`` (``engine/duplex/session/runner.py``, ``start``).
So the fold (``shim/dialects/relay_kept_update.py``) states nothing a live update left
unread, and what an opening cannot carry follows it as an update."""

from __future__ import annotations

import copy
import sys
import types as modules
from typing import Any
from unittest import mock

from proxy.config import Route
from proxy.upstream import opening_update
from shim import snapshot
from tests.duplex_relay_script import make
from tests.relay_kept_updates import lost, updated
from tests.shim_script import upstream_events
from tests.wheel_duplex_config import Wheel, wheel_config
from tests.wheel_realtime_session import wheel_session
from tests.wheel_turn_detection import wheel_turns

__all__ = ["wheel_config", "wheel_session", "wheel_turns"]

NUMBERS = ("overlap_short_ack_ms", "overlap_barge_in_ms", "overlap_silence_rms")
FIELDS = ("overlap_policy", *NUMBERS, "playback_commit_policy")


def opened(wheel: Wheel, session: dict[str, Any]) -> Any:
    """The session vLLM-Omni opens with ``session``, as to the fields ``from_realtime``
    passes ``from_event`` as it got them (the overlap fields flat, ``extra_body``, the
    seeded text, the idle timeout), normalized, then started (``ack_only``)."""
    config, stubs = wheel
    protocol = stubs["vllm_omni.protocol.duplex"]
    extra = session.get("extra_body")
    wire = {
        **protocol.realtime_overlap_fields(session),
        "initial_user_text": session.get("initial_user_text"),
        "idle_timeout_s": session.get("idle_timeout_s") or 300.0,
        "extra_body": dict(extra) if isinstance(extra, dict) else {},
    }
    with mock.patch.dict(sys.modules, stubs):
        cfg = config.DuplexSessionConfig.from_event({"session": wire}).normalized()
    cfg.playback_commit_policy = "ack_only"
    return cfg


def applied(wheel: Wheel, turns: modules.ModuleType, cfg: Any, *updates: dict[str, Any]) -> Any:
    """``cfg`` after each update as ``on_session_update`` applies one."""
    _, stubs = wheel
    with mock.patch.dict(sys.modules, stubs):
        for each in updates:
            payload = copy.deepcopy(dict(each))
            assert turns.validate_realtime_turn_detection(payload) is None, payload
            turns.normalize_turn_detection_session_payload(payload)
            cfg.apply_realtime_update(payload)
    return cfg


def fields(cfg: Any) -> dict[str, Any]:
    return {name: getattr(cfg, name) for name in FIELDS}


def moved(wheel: Wheel, turns: modules.ModuleType, *updates: dict[str, Any]) -> Any:
    """The session a replica taking the session over runs: opened with the fold
    (``shim/snapshot.py``, ``opening_session``), then given what the restore sends."""
    sc = make()
    updated(sc, *updates)
    wire = sc.s.snapshot()
    taken = make(bound=False)
    after = [e["session"] for e in upstream_events(taken.s.restore(wire))]
    opening = snapshot.opening_session(wire) or {}
    return applied(wheel, turns, opened(wheel, opening), *after)


def live(wheel: Wheel, turns: modules.ModuleType, *updates: dict[str, Any]) -> Any:
    return applied(wheel, turns, opened(wheel, {}), *updates)


CASES: list[tuple[dict[str, Any], ...]] = [
    ({"extra_body": {"overlap_short_ack_ms": 100, "overlap_silence_rms": 0.5}},),
    ({"extra_body": {"overlap_barge_in_ms": 100}}, {"overlap_barge_in_ms": 3000}),
    ({"overlap_short_ack_ms": 900}, {"extra_body": {"overlap_short_ack_ms": 100, "a": 1}}),
]


def test_extra_body_numbers_a_live_update_ignores_are_not_read_after_a_move(
    wheel_config: Wheel, wheel_turns: modules.ModuleType
) -> None:
    for updates in CASES:
        want = fields(live(wheel_config, wheel_turns, *updates))
        assert fields(moved(wheel_config, wheel_turns, *updates)) == want, updates
        sc = make()
        updated(sc, *updates)
        after_loss = applied(wheel_config, wheel_turns, opened(wheel_config, {}), lost(sc))
        assert fields(after_loss) == want, updates


def test_open_only_settings_a_live_update_ignores_are_not_folded(
    wheel_config: Wheel, wheel_turns: modules.ModuleType
) -> None:
    """``initial_user_text`` (an unanswered user item at open) and ``idle_timeout_s``
    are read only when a session opens: sent live, they change nothing."""
    updates = ({"initial_user_text": "hi", "idle_timeout_s": 5, "instructions": "x"},)
    cfg = moved(wheel_config, wheel_turns, *updates)
    assert (cfg.initial_user_text, cfg.idle_timeout_s) == (None, 300.0)
    sc = make()
    updated(sc, *updates)
    assert lost(sc) == {"instructions": "x"}


def test_the_routes_extra_body_stays_under_the_clients_on_a_moves_opening(
    wheel_config: Wheel, wheel_turns: modules.ModuleType
) -> None:
    """A fold with ``extra_body`` (here a flat ``listen_only`` beside server VAD, moved
    there) merges into the route's, key by key: Nemotron opens only with its
    ``auto_response`` (``config.toml``)."""
    route = Route(
        model="m",
        upstream="ws://up/v1/realtime",
        session_defaults={"extra_body": {"auto_response": True, "a": 1}},
    )
    sc = make()
    updated(sc, {"turn_detection": {"type": "server_vad"}}, {"overlap_policy": "listen_only"})
    updated(sc, {"extra_body": {"a": 2}})
    opening = opening_update(route, "m", snapshot.opening_session(sc.s.snapshot()))
    extra = opening["session"]["extra_body"]
    assert extra == {"auto_response": True, "a": 2, "overlap_policy": "listen_only"}
    assert opened(wheel_config, opening["session"]).overlap_policy == "listen_only"
    assert opening_update(route, "m", {"extra_body": None})["session"]["extra_body"] == {
        "auto_response": True,
        "a": 1,
    }


def test_a_move_gives_the_commit_policy_the_opening_cannot_carry(
    wheel_config: Wheel, wheel_turns: modules.ModuleType
) -> None:
    """vLLM-Omni starts every session ``ack_only``, whatever its opening said: the
    kept policy follows the opening as an update, in either spelling."""
    for updates in (
        ({"extra_body": {"playback_commit_policy": "commit_all_on_done"}},),
        ({"playback_commit_policy": "commit_all_on_done"}, {"instructions": "x"}),
    ):
        want = fields(live(wheel_config, wheel_turns, *updates))
        assert want["playback_commit_policy"] == "commit_all_on_done"
        assert fields(moved(wheel_config, wheel_turns, *updates)) == want, updates
    sc = make()
    updated(sc, {"playback_commit_policy": "ack_only", "instructions": "x"})
    assert not upstream_events(make(bound=False).s.restore(sc.s.snapshot()))


def test_a_live_flat_number_wins_over_the_routes_extra_body_after_a_move(
    wheel_config: Wheel, wheel_turns: modules.ModuleType
) -> None:
    """An opening reads ``extra_body``'s overlap numbers last, a live update reads them
    flat: the client's live ``overlap_silence_rms`` (stated flat in the fold) is not
    overridden by the route's ``extra_body`` copy when a move reopens the session."""
    route = Route(
        model="m",
        upstream="ws://up/v1/realtime",
        session_defaults={"extra_body": {"auto_response": True, "overlap_silence_rms": 0.02}},
    )
    update = {"overlap_silence_rms": 0.01}
    first = opened(wheel_config, opening_update(route, "m", None)["session"])
    live_cfg = applied(wheel_config, wheel_turns, first, update)
    assert live_cfg.overlap_silence_rms == 0.01
    sc = make()
    updated(sc, update)
    wire = sc.s.snapshot()
    after = [e["session"] for e in upstream_events(make(bound=False).s.restore(wire))]
    reopened = opening_update(route, "m", snapshot.opening_session(wire))["session"]
    moved_cfg = applied(wheel_config, wheel_turns, opened(wheel_config, reopened), *after)
    assert fields(moved_cfg) == fields(live_cfg), reopened
    assert reopened["extra_body"] == {"auto_response": True}


def test_a_null_flat_number_leaves_the_routes_extra_body_one() -> None:
    """vLLM-Omni takes an overlap number flat only if it is a number (``from_event``):
    a null (an SDK serialising unset fields) must not drop the route's ``extra_body``
    copy, or the upstream runs its own default instead of the route's level."""
    route = Route(
        model="m",
        upstream="ws://up/v1/realtime",
        session_defaults={"extra_body": {"overlap_silence_rms": 0.02}},
    )
    session = opening_update(route, "m", {"overlap_silence_rms": None})["session"]
    assert session["extra_body"].get("overlap_silence_rms") == 0.02, session
