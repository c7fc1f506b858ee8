"""Classification from what the upstream actually sent.

``docs/protocol.md``, "Opening a session" and "The three modes".
"""

from __future__ import annotations

import pytest

from shim.capabilities import classify, proxy_capabilities

TURN_CREATED = {"type": "session.created", "id": "sess-0123456789abcdef", "created": 1}


def duplex_created(barge_in: bool) -> dict[str, object]:
    return {
        "type": "session.created",
        "session": {
            "id": "duplex-1",
            "capabilities": {
                "supports_barge_in": barge_in,
                "supports_audio_truncate": barge_in,
                "supports_session_resume": True,
                "implementation_level": "model_native_duplex",
            },
        },
        "resume_token": "t",
    }


@pytest.mark.parametrize(
    ("created", "mode", "kind"),
    [
        (duplex_created(True), "passthrough", "duplex"),
        (duplex_created(False), "barge_in_emulated", "duplex"),
        (TURN_CREATED, "duplex_emulated", "turn"),
        ({"type": "session.created", "session": {"id": "x"}}, "barge_in_emulated", "duplex"),
    ],
)
def test_auto_mode_follows_the_upstream(created: dict[str, object], mode: str, kind: str) -> None:
    cls = classify(created)
    assert (cls.mode, cls.kind) == (mode, kind)
    assert cls.reasons


def test_forced_mode_is_honoured_except_where_it_would_lie() -> None:
    assert classify(duplex_created(True), forced="barge_in_emulated").mode == "barge_in_emulated"
    turn = classify(TURN_CREATED, forced="passthrough")
    assert turn.mode == "duplex_emulated"
    assert any("impossible" in r for r in turn.reasons)


def test_refused_duplex_is_reported() -> None:
    cls = classify(TURN_CREATED, duplex_refused=True)
    assert any("refused ?duplex=1" in r for r in cls.reasons)


def test_emulated_capabilities_tell_the_truth_through_the_proxy() -> None:
    cls = classify(duplex_created(False))
    caps = proxy_capabilities(cls, resume_available=True)
    for flag in ("supports_barge_in", "supports_playback_ack", "supports_audio_truncate"):
        assert caps[flag] is True
    assert caps["proxy"]["mode"] == "barge_in_emulated"
    assert caps["proxy"]["upstream"]["supports_barge_in"] is False
    no_store = proxy_capabilities(cls, resume_available=False)
    assert no_store["supports_session_resume"] is False


def test_passthrough_capabilities_are_the_upstreams() -> None:
    cls = classify(duplex_created(True))
    caps = proxy_capabilities(cls, resume_available=True)
    assert caps["supports_session_resume"] is True  # the upstream's own resume
    unbound = proxy_capabilities(cls, resume_available=False)
    assert unbound["supports_session_resume"] is False, "no replica could find it again"
    assert caps["proxy"] == {
        "mode": "passthrough",
        "upstream": dict(duplex_created(True)["session"]["capabilities"]),  # type: ignore[index]
        "reasons": list(cls.reasons),
    }


def test_not_a_session_created_is_refused() -> None:
    with pytest.raises(ValueError):
        classify({"type": "error"})
