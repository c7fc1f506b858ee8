"""Errors and endings mid-session on the duplex reference backends: transport errors are
answered directly and the session goes on, a binary frame fails it, and
``session.close`` ends it with ``session.closed`` and close code 1000.

On the lenient preset (``tests/reference_duplex_client.py``, ``backend``).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from shim.audio import b64encode
from tests.reference_duplex_client import backend, opened, peer, session_of

pytestmark = pytest.mark.timeout(60)


async def test_transport_errors_are_direct_and_session_survives() -> None:
    async with backend() as (http, base), peer(http, f"{base}/v1/realtime?model=m") as p:
        await opened(p)

        async def error_for(raw: str) -> dict[str, object]:
            await p.ws.send_str(raw)
            event = await p.recv()
            assert event["type"] == "error" and "server_event_seq" not in event
            error = event["error"]
            assert isinstance(error, dict)
            return error

        assert (await error_for("{bad"))["code"] == "invalid_json"
        assert (await error_for("[]"))[
            "message"
        ] == "Duplex event must be a JSON object with a type"
        assert await error_for('{"type":"nope","event_id":"evt_9"}') == {
            "type": "invalid_request_error",
            "code": "unknown_event",
            "message": "Unknown duplex event type: nope",
            "event_id": "evt_9",
        }
        bad_b64 = '{"type":"input_audio_buffer.append","audio":"QUJ"}'
        assert (await error_for(bad_b64))["code"] == "bad_audio"
        # Read leniently (``b64decode(validate=False)``), nothing is left of it.
        no_b64 = '{"type":"input_audio_buffer.append","audio":"***"}'
        assert (await error_for(no_b64))["code"] == "invalid_input_modality"
        assert (await error_for('{"type":"input_audio_buffer.append"}'))["code"] == "bad_event"
        f32 = b64encode(np.zeros(480, dtype="<f4").tobytes())
        wrong_rate = json.dumps(
            {
                "type": "input_audio_buffer.append",
                "audio": f32,
                "format": "pcm_f32le",
                "sample_rate_hz": 24000,
            }
        )
        assert (await error_for(wrong_rate))["code"] == "bad_event"
        assert (await error_for('{"type":"playback.ack"}'))[
            "message"
        ] == "playback.ack requires numeric played_ms"
        assert (await error_for('{"type":"session.resume","event_id":"e"}'))[
            "code"
        ] == "unsupported_session_resume"
        assert (await error_for('{"type":"session.event_ack","server_event_seq":99}'))[
            "code"
        ] == "invalid_event_ack"
        assert (
            await error_for(
                '{"type":"session.update","session":{"model":"m","input_audio_format":"mp3"}}'
            )
        ) == {
            "type": "invalid_request_error",
            "code": "unsupported_audio_format",
            "message": "Unsupported input_audio_format: mp3",
        }
        # Engine-side errors are journaled and keep the client's event_id.
        await p.send({"type": "input_audio_buffer.commit", "event_id": "evt_c"})
        empty = await p.recv()
        assert empty["error"] == {
            "type": "invalid_request_error",
            "code": "input_audio_buffer_empty",
            "message": "input_audio_buffer.commit requires a non-empty input audio buffer",
            "event_id": "evt_c",
        }
        assert empty["server_event_seq"] == 2
        await p.send({"type": "response.cancel"})
        assert (await p.recv())["error"] == {
            "type": "invalid_request_error",
            "code": "response_not_active",
            "message": "response.cancel requires an active response",
        }
        await p.send({"type": "session.update", "session": {"model": "other"}, "event_id": "evt_u"})
        assert isinstance((changed := await p.recv())["error"], dict)
        assert changed["error"]["code"] == "model_update_unsupported"
        await p.send({"type": "session.update", "session": {"instructions": "be brief"}})
        updated = await p.recv()
        assert (
            updated["type"] == "session.updated"
            and session_of(updated)["instructions"] == "be brief"
        )
        await p.send({"type": "session.heartbeat"})
        assert (await p.recv())["type"] == "session.heartbeat_ack"


async def test_binary_frame_fails_the_session() -> None:
    async with backend() as (http, base), peer(http, f"{base}/v1/realtime?model=m") as p:
        await opened(p)
        await p.ws.send_bytes(b"\x00\x01")
        error = await p.recv()
        assert (
            isinstance(error["error"], dict) and error["error"]["code"] == "realtime_input_failed"
        )
        closed = await p.recv()
        assert closed["type"] == "session.closed" and closed["reason"] == "transport_error"
        assert await p.closed() == 1000
        assert p.ws.close_code == 1000


async def test_session_close_sends_closed_then_1000() -> None:
    async with backend() as (http, base), peer(http, f"{base}/v1/realtime?model=m") as p:
        await opened(p)
        await p.send({"type": "session.close"})
        closed = await p.recv()
        assert closed["type"] == "session.closed"
        assert closed["reason"] == "client_close" and closed["event"] == {}
        assert await p.closed() == 1000
