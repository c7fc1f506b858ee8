"""A GA client's voice changes to a relay by script: the ``session.update`` naming a voice,
what the upstream gets for it and what the client is told, and whether it went upstream."""

from __future__ import annotations

from typing import Any

from tests.shim_script import Script, client_events, upstream_events


def update(sc: Script, session: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The session the upstream gets for the client's update, and what the client is told."""
    ev = {"type": "session.update", "event_id": "evt_v", "session": {"type": "realtime", **session}}
    out = sc.client(ev)
    [sent] = [e for e in upstream_events(out) if e["type"] == "session.update"]
    return dict(sent["session"]), client_events(out)


def voiced(voice: str, **rest: Any) -> dict[str, Any]:
    return {"audio": {"output": {"voice": voice}}, **rest}


def changed_voice(sc: Script, voice: str) -> bool:
    """Whether a voice change goes upstream now (else it is refused to the client)."""
    sent, told = update(sc, voiced(voice))
    kinds = [e["type"] for e in told]
    assert kinds in (["session.updated"], ["error", "session.updated"]), told
    assert ("voice" in sent.get("audio", {}).get("output", {})) is (kinds == ["session.updated"])
    return kinds == ["session.updated"]
