"""A GA client's ``voice`` goes up to a duplex upstream only when it changes
(``shim/dialects/ga_voice.py``): vLLM-Omni 0.30.0 refuses a whole ``session.update``
naming any voice once it has output audio (``engine/duplex/config.py``,
``apply_realtime_update``), and GA clients such as the Agents SDK restate theirs in
every update. A real change after the model has spoken is refused to the client, and
the rest of the update applies."""

from __future__ import annotations

from typing import Any

from shim.inputs import UpstreamLost
from tests.shim_script import Script, client_events, upstream_events
from tests.test_shim_ga_relay import answer, make


def update(sc: Script, session: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The session the upstream gets for the client's update, and what the client is told."""
    ev = {"type": "session.update", "event_id": "evt_v", "session": {"type": "realtime", **session}}
    out = sc.client(ev)
    [sent] = [e for e in upstream_events(out) if e["type"] == "session.update"]
    return dict(sent["session"]), client_events(out)


def voiced(voice: str, **rest: Any) -> dict[str, Any]:
    return {"audio": {"output": {"voice": voice}}, **rest}


def test_an_unchanged_voice_is_not_restated_after_the_model_has_spoken() -> None:
    sc = make()
    sent, _ = update(sc, voiced("ash"))  # before any audio: the upstream takes it
    assert sent["audio"]["output"]["voice"] == "ash"
    answer(sc)  # a turn taken: the instructions are fixed too (ga_instructions.py)
    sent, told = update(sc, voiced("ash", tools=[]))
    assert sent["tools"] == []
    assert "voice" not in sent.get("audio", {}).get("output", {}) and "voice" not in sent
    assert [e["type"] for e in told] == ["session.updated"]


def test_a_changed_voice_after_audio_is_refused_and_the_rest_applies() -> None:
    sc = make()
    update(sc, voiced("ash"))
    answer(sc)
    sent, told = update(sc, {"audio": {"output": {"voice": "verse", "speed": 1.2}}})
    assert sent["audio"]["output"]["speed"] == 1.2
    assert "voice" not in sent.get("audio", {}).get("output", {})
    error, updated = told
    assert error["error"]["code"] == "voice_update_after_audio_unsupported"
    assert error["error"]["param"] == "session.audio.output.voice"
    assert error["error"]["event_id"] == "evt_v"
    assert updated["type"] == "session.updated"
    # A fresh upstream after a loss is given the voice the session kept, not the refused one.
    out = sc.s.handle(UpstreamLost("resume refused", sc.now, resume=False))
    [restore] = upstream_events(out)
    assert restore["session"]["audio"]["output"]["voice"] == "ash"
    assert restore["session"]["audio"]["output"]["speed"] == 1.2


def test_before_any_audio_a_voice_may_change() -> None:
    sc = make()
    update(sc, voiced("ash"))
    sent, told = update(sc, voiced("verse"))
    assert sent["audio"]["output"]["voice"] == "verse"
    assert [e["type"] for e in told] == ["session.updated"]
