"""Classification from what the upstream actually sent.

``docs/protocol.md``, "Opening a session" and "The three modes".
"""

from __future__ import annotations

import pytest

from shim.capabilities import GA_PASSTHROUGH_REASON, classify, client_of, proxy_capabilities
from tests.servers import connect, proxy, proxy_config, reference, ws_url

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


def test_a_ga_client_is_emulated_unless_the_route_keeps_passthrough() -> None:
    default = classify(duplex_created(True), client="ga")
    assert default.mode == "barge_in_emulated" and default.ga_client
    kept = classify(duplex_created(True), client="ga", ga_passthrough=True)
    assert kept.mode == "passthrough" and GA_PASSTHROUGH_REASON in kept.reasons
    # Nothing to keep over an upstream that cannot barge in, or a turn-based one.
    assert classify(duplex_created(False), client="ga", ga_passthrough=True).mode == (
        "barge_in_emulated"
    )
    assert classify(TURN_CREATED, client="ga", ga_passthrough=True).mode == "duplex_emulated"


@pytest.mark.parametrize("created", [duplex_created(True), duplex_created(False), TURN_CREATED])
@pytest.mark.parametrize("client", ["ga", "native"])
def test_the_client_kind_survives_in_the_reasons(created: dict[str, object], client: str) -> None:
    """A session resumed from the store rebuilds its client kind from the stored reasons
    (``proxy/resume/from_store.py``); over a turn-based upstream it decides the empty
    commit's error code."""
    for kept in (False, True):
        cls = classify(created, client=client, ga_passthrough=kept)  # type: ignore[arg-type]
        assert client_of(cls.reasons) == client


@pytest.mark.parametrize("ga_passthrough", [None, False, True])
async def test_route_key_ga_passthrough_relays_a_ga_client_byte_for_byte(
    ga_passthrough: bool | None,
) -> None:
    """``routes[].ga_passthrough``: a GA client (no ?duplex=1) over a duplex upstream
    that can barge in is passed through; unset or false it is ``barge_in_emulated``."""
    async with reference("duplex") as upstream:
        route: dict[str, object] = {"model": "m", "upstream": upstream}
        if ga_passthrough is not None:
            route["ga_passthrough"] = ga_passthrough
        async with proxy(proxy_config({}, routes=[route])) as base, connect(ws_url(base)) as c:
            created = await c.until("session.created", timeout=5)
            proxied = created["session"]["capabilities"]["proxy"]
            await c.send({"type": "input_audio_buffer.commit"})
            error = await c.until("error", timeout=5)
    if ga_passthrough:
        assert proxied["mode"] == "passthrough"
        assert GA_PASSTHROUGH_REASON in proxied["reasons"]
        # The upstream's own answer, unchanged: vLLM-Omni's code, not GA's.
        assert error["error"]["code"] == "input_audio_buffer_empty"
    else:
        assert proxied["mode"] == "barge_in_emulated"
        assert any("GA client" in reason for reason in proxied["reasons"])


@pytest.mark.parametrize(
    ("query", "code"),
    [({}, "input_audio_buffer_commit_empty"), ({"duplex": "1"}, "input_audio_buffer_empty")],
)
async def test_over_a_turn_upstream_an_empty_commit_is_refused_in_the_clients_protocol(
    query: dict[str, str], code: str
) -> None:
    """The client kind reaches ``duplex_emulated``: GA's code to a GA client, vLLM-Omni's
    own to a native one (``?duplex=1``)."""
    async with (
        reference("turn") as upstream,
        proxy(proxy_config({"m": upstream})) as base,
        connect(ws_url(base, **query)) as c,
    ):
        created = await c.until("session.created", timeout=5)
        assert created["session"]["capabilities"]["proxy"]["mode"] == "duplex_emulated"
        await c.send({"type": "input_audio_buffer.commit", "event_id": "evt_1"})
        error = await c.until("error", timeout=5)
    assert error["error"]["code"] == code and error["error"]["event_id"] == "evt_1"


def test_a_turn_based_upstream_is_told_in_vllm_omnis_input_keys() -> None:
    """Over a turn-based upstream (which tells no capabilities of its own) the session
    says what it takes in vLLM-Omni's keys: audio appended in chunks, no text-only
    turns, no camera frames; and no audio unit (no ``chunk_period_ms``)."""
    cls = classify({"type": "session.created", "id": "x", "created": 1}, client="native")
    caps = proxy_capabilities(cls, resume_available=True)
    assert cls.mode == "duplex_emulated"
    assert caps["supports_input_append"] is True
    assert caps["input_modes"] == ["append_audio_chunk"]
    assert (
        caps["required_input_modalities"] == ["audio"] and caps["optional_input_modalities"] == []
    )
    assert caps["supports_image_input"] is False and caps["supports_text_only_turn"] is False
    assert "chunk_period_ms" not in caps
    caps["input_modes"].append("changed")  # each session's own lists
    assert proxy_capabilities(cls, resume_available=True)["input_modes"] == ["append_audio_chunk"]
