"""Opening a session on the duplex reference backends over a real socket: autostart or
a first ``session.update``, the capabilities each profile reports, and the first
messages, timeouts, models and extras that refuse an open (``docs/fidelity.md`` row 6).

On the lenient preset (``tests/reference_duplex_client.py``, ``backend``).
"""

from __future__ import annotations

import re

import pytest

from proxy.reference import ReferenceOptions
from tests.reference_duplex_client import backend, opened, peer, session_of

pytestmark = pytest.mark.timeout(60)


CAPABILITY_KEYS = [
    "supports_session_adapter",
    "supports_model_native_turn_policy",
    "supports_external_turn_signal",
    "supports_client_commit",
    "supports_barge_in",
    "supports_playback_ack",
    "supports_input_append",
    "supports_replace_latest_chunk",
    "supports_reencode_context",
    "supports_rollback_to_checkpoint",
    "supports_turn_commit_only",
    "supports_kv_lease",
    "supports_core_kv_lease",
    "supports_model_internal_state",
    "supports_stage_resumption",
    "supports_scheduler_native_append",
    "supports_core_resumable_request",
    "supports_concurrent_turn_requests",
    "required_input_modalities",
    "optional_input_modalities",
    "supports_stage_connector_handoff",
    "supports_independent_io_streams",
    "supports_realtime_endpoint",
    "supports_multi_session",
    "supports_multi_session_same_replica",
    "supports_session_lease",
    "supports_session_resume",
    "session_admission_mode",
    "supports_audio_truncate",
    "supports_image_input",
    "supports_text_only_turn",
    "requires_model_runner_kv",
    "requires_native_stage_role",
    "implementation_level",
    "adapter_patterns",
    "input_modes",
    "signal_sources",
    "stage_handoff_transport",
    "chunk_period_ms",
    "target_barge_in_latency_ms",
]


async def test_autostart_session_created_then_updated() -> None:
    async with (
        backend(reply_ms=600) as (http, base),
        peer(http, f"{base}/v1/realtime?model=m") as p,
    ):
        created = await p.recv()
        assert list(created) == [
            "type",
            "event_id",
            "session",
            "attachment_generation",
            "resume_token",
        ]
        assert "server_event_seq" not in created and created["attachment_generation"] == 1
        session = session_of(created)
        assert re.fullmatch(r"duplex-[0-9a-f]{32}", str(session["id"]))
        assert session["model"] == "m" and session["object"] == "realtime.session"
        assert session["playback_commit_policy"] == "ack_only"
        assert session["playback"] == {
            "generated_ms": 0,
            "sent_ms": 0,
            "played_ms": 0,
            "committed_ms": 0,
        }
        caps = session["capabilities"]
        assert isinstance(caps, dict) and list(caps) == CAPABILITY_KEYS
        assert caps["supports_barge_in"] is True and caps["supports_audio_truncate"] is True
        assert caps["implementation_level"] == "model_native_duplex"
        assert caps["chunk_period_ms"] == 200 and caps["target_barge_in_latency_ms"] == 400
        updated = await p.recv()
        assert updated["type"] == "session.updated" and updated["server_event_seq"] == 1
        assert list(updated)[-1] == "server_event_seq"
        assert updated["session"] == session


async def test_no_barge_in_profile_is_nemotron_like() -> None:
    async with (
        backend("duplex-no-barge-in") as (http, base),
        peer(http, f"{base}/v1/duplex?model=m") as p,
    ):
        caps = session_of(await opened(p))["capabilities"]
        assert isinstance(caps, dict) and list(caps) == CAPABILITY_KEYS
        assert caps["supports_barge_in"] is False and caps["supports_audio_truncate"] is False
        assert caps["supports_session_resume"] is True and caps["supports_playback_ack"] is True
        assert caps["chunk_period_ms"] == 80 and caps["target_barge_in_latency_ms"] is None


async def test_first_message_session_update_opens_and_echoes() -> None:
    async with (
        backend() as (http, base),
        peer(http, f"{base}/v1/realtime?duplex=1&model=m&autostart=0") as p,
    ):
        await p.send(
            {
                "type": "session.update",
                "session": {
                    "model": "m",
                    "ref_audio": "data:audio/wav;base64,AAAA",
                    "sample_rate_hz": 16000,
                    "extra_body": {"auto_response": True},
                    "turn_detection": {"type": "server_vad"},
                },
            }
        )
        session = session_of(await opened(p))
        assert session["ref_audio"] == "data:audio/wav;base64,AAAA" and "extra_body" not in session
        assert session["overlap_policy"] == "barge_in_on_speech"
        assert session["turn_detection"] == {
            "type": "server_vad",
            "interrupt_response": True,
            "threshold": 0.5,
            "prefix_padding_ms": 300,
            "silence_duration_ms": 500,
            "min_speech_duration_ms": 96,
        }


async def test_other_first_message_opens_default_session_and_runs() -> None:
    async with backend() as (http, base):
        async with peer(http, f"{base}/v1/duplex") as p:
            await p.send({"type": "session.heartbeat", "event_id": "evt_1"})
            await opened(p)
            ack = await p.recv()
            assert ack["type"] == "session.heartbeat_ack" and ack["server_event_seq"] == 2
        async with peer(http, f"{base}/v1/duplex") as p:
            await p.send({"type": "session.event_ack", "server_event_seq": 0})
            await opened(p)
            error = await p.recv()
            assert error["error"] == {
                "type": "invalid_request_error",
                "code": "unknown_event",
                "message": "Unknown duplex event type: session.event_ack",
            }
            assert "server_event_seq" not in error


@pytest.mark.parametrize(
    ("first", "code", "message"),
    [
        ("{nope", "invalid_json", "Invalid JSON in session.update"),
        ("[1, 2]", "bad_event", "Realtime event must be a JSON object"),
    ],
)
async def test_bad_first_message_errors_then_closes(first: str, code: str, message: str) -> None:
    async with backend() as (http, base), peer(http, f"{base}/v1/duplex") as p:
        await p.ws.send_str(first)
        error = await p.recv()
        assert list(error) == ["type", "event_id", "error"]
        assert error["error"] == {"type": "invalid_request_error", "code": code, "message": message}
        assert await p.closed() == 1000


async def test_config_timeout_and_open_failures() -> None:
    options = ReferenceOptions(fidelity="lenient", config_timeout_s=0.2)
    async with backend(served_model="m", options=options) as (http, base):
        async with peer(http, f"{base}/v1/duplex") as p:
            assert (await p.recv())["error"] == {
                "type": "invalid_request_error",
                "code": "config_timeout",
                "message": "Timeout waiting for session.update",
            }
            assert await p.closed() == 1000
        async with peer(http, f"{base}/v1/duplex?model=other") as p:
            error = await p.recv()
            assert error["type"] == "error" and isinstance(error["error"], dict)
            assert error["error"]["code"] == "model_not_found"
            assert await p.closed() == 1000
        async with peer(http, f"{base}/v1/duplex") as p:
            await p.send(
                {"type": "session.update", "session": {"turn_detection": {"type": "semantic"}}}
            )
            error = await p.recv()
            assert isinstance(error["error"], dict)
            assert error["error"]["code"] == "invalid_session_config"  # quirk: not the live code
            assert error["error"]["message"] == "turn_detection.type must be 'server_vad'"


async def test_realtime_with_falsy_duplex_is_not_available() -> None:
    async with backend() as (http, base), peer(http, f"{base}/v1/realtime?duplex=0") as p:
        msg = await p.ws.receive()
        assert (
            msg.data
            == '{"type":"error","error":"Realtime API is not available","code":"unsupported"}'
        )
        assert await p.closed() == 1000


@pytest.mark.parametrize(
    ("kind", "code"),
    [("duplex", "ref_audio_required"), ("duplex-no-barge-in", "unsupported_nemotron_duplex_mode")],
)
async def test_model_extras_can_be_required(kind: str, code: str) -> None:
    options = ReferenceOptions(fidelity="lenient", require_model_extras=True)
    async with backend(kind, options=options) as (http, base):
        async with peer(http, f"{base}/v1/duplex?model=m") as p:
            error = await p.recv()
            assert isinstance(error["error"], dict) and error["error"]["code"] == code
            assert await p.closed() == 1000
        extras = {"ref_audio": "data:audio/wav;base64,AAAA", "extra_body": {"auto_response": True}}
        async with peer(http, f"{base}/v1/duplex") as p:
            await p.send({"type": "session.update", "session": {"model": "m", **extras}})
            assert (await p.recv())["type"] == "session.created"
