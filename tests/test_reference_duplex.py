"""The duplex reference backends on a real socket: handshake, turns, overlap, resume, errors.

They stand in for vLLM-Omni 0.30.0's ``OmniDuplexSessionHandler`` (MiniCPM-o 4.5 profile
for kind "duplex", Nemotron VoiceChat for "duplex-no-barge-in"); the expectations below
are the behaviours ``docs/fidelity.md`` lists.  They run the lenient preset (pinned in
``backend``); the strict preset, the default, is tested in ``tests/test_reference_strict.py``.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import aiohttp
import numpy as np
import pytest
from aiohttp import WSMsgType, web

from proxy.reference import ReferenceOptions, running_reference_backend
from proxy.reference.outbound import Outbound
from proxy.reference.speech_detector import START, SpeechDetector
from shim.audio import b64encode
from tests.testaudio import chunks, noise, silence, vowel

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

TURN = np.concatenate([vowel(700), silence(700)])
OVERLAP = np.concatenate([vowel(800), silence(700)])


class Peer:
    """A duplex client that records every frame it reads."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws
        self.events: list[dict[str, object]] = []
        self.times: list[float] = []
        self.close_reason: object = None

    async def recv(self, within_s: float = 5.0) -> dict[str, object]:
        msg = await self.ws.receive(timeout=within_s)
        assert msg.type == WSMsgType.TEXT, (msg.type, msg.data, self.ws.close_code)
        event: dict[str, object] = json.loads(msg.data)
        self.events.append(event)
        self.times.append(time.monotonic())
        return event

    async def until(
        self,
        kind: str,
        within_s: float = 8.0,
        where: Callable[[dict[str, object]], bool] | None = None,
    ) -> dict[str, object]:
        deadline = time.monotonic() + within_s
        while True:
            event = await self.recv(max(0.01, deadline - time.monotonic()))
            if event["type"] == kind and (where is None or where(event)):
                return event

    async def send(self, event: dict[str, object]) -> None:
        await self.ws.send_str(json.dumps(event))

    async def speak(self, audio: np.ndarray, *, rate_hz: int = 16000) -> None:
        for chunk in chunks(audio, rate_hz=rate_hz, chunk_ms=100):
            await self.send(
                {
                    "type": "input_audio_buffer.append",
                    "audio": b64encode(chunk),
                    "sample_rate_hz": rate_hz,
                }
            )

    async def closed(self, within_s: float = 5.0) -> int | None:
        while True:
            msg = await self.ws.receive(timeout=within_s)
            if msg.type in (WSMsgType.CLOSE, WSMsgType.CLOSING, WSMsgType.CLOSED):
                self.close_reason = msg.extra
                return self.ws.close_code
            self.events.append(json.loads(msg.data))

    def of(self, kind: str) -> list[dict[str, object]]:
        return [e for e in self.events if e["type"] == kind]

    def types(self) -> list[object]:
        return [e["type"] for e in self.events]


@asynccontextmanager
async def backend(
    kind: str = "duplex", **kwargs: object
) -> AsyncIterator[tuple[aiohttp.ClientSession, str]]:
    # The lenient preset unless a test brings its own options: these are the stand-in's
    # own forgiving behaviours (the strict ones are in tests/test_reference_strict.py).
    kwargs.setdefault("options", ReferenceOptions(fidelity="lenient"))
    async with running_reference_backend(kind, **kwargs) as base:  # type: ignore[arg-type]
        async with aiohttp.ClientSession() as http:
            yield http, base.replace("http://", "ws://")


@asynccontextmanager
async def peer(http: aiohttp.ClientSession, url: str) -> AsyncIterator[Peer]:
    async with http.ws_connect(url) as ws:
        yield Peer(ws)


async def opened(p: Peer) -> dict[str, object]:
    created = await p.recv()
    assert created["type"] == "session.created"
    updated = await p.recv()
    assert updated["type"] == "session.updated"
    return created


def session_of(created: dict[str, object]) -> dict[str, object]:
    session = created["session"]
    assert isinstance(session, dict)
    return session


def pcm(event: dict[str, object]) -> np.ndarray:
    return np.frombuffer(base64.b64decode(str(event["delta"])), dtype="<i2")


def resume_request(created: dict[str, object], last_seen: int | None = None) -> dict[str, object]:
    """``session.resume`` for the session ``created`` opened, after ``last_seen``."""
    request: dict[str, object] = {
        "type": "session.resume",
        "session_id": session_of(created)["id"],
        "resume_token": created["resume_token"],
    }
    if last_seen is not None:
        request["last_received_server_event_seq"] = last_seen
    return request


@asynccontextmanager
async def after_turn(
    kind: str = "duplex", *, path: str = "/v1/realtime?model=m", **kwargs: object
) -> AsyncIterator[Peer]:
    """An opened session on a ``backend(kind, **kwargs)`` that has just said ``TURN``."""
    async with backend(kind, **kwargs) as (http, base), peer(http, f"{base}{path}") as p:
        await opened(p)
        await p.speak(TURN)
        yield p


# ---- handshake ----


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


# ---- a spoken turn ----


@pytest.mark.parametrize(
    ("kind", "rate", "chunk_ms"), [("duplex", 24000, 200), ("duplex-no-barge-in", 22050, 80)]
)
async def test_spoken_turn_streams_paced_audio_and_transcript(
    kind: str, rate: int, chunk_ms: int
) -> None:
    async with after_turn(kind, reply_ms=1000) as p:
        done = await p.until("response.done")
        response = done["response"]
        assert isinstance(response, dict)
        assert response["status"] == "completed"
        assert response["status_details"] == {"type": "completed", "reason": "stop"}
        assert (await p.recv())["type"] == "rate_limits.updated"
        types = p.types()
        start = types.index("input_audio_buffer.speech_started")
        assert types[start : start + 7] == [
            "input_audio_buffer.speech_started",
            "input_audio_buffer.speech_stopped",
            "conversation.item.added",
            "conversation.item.created",
            "input_audio_buffer.committed",
            "conversation.item.input_audio_transcription.completed",
            "conversation.item.done",
        ]
        first = types.index("response.created")
        assert types[first : first + 6] == [
            "response.created",
            "conversation.item.added",
            "conversation.item.created",
            "response.output_item.added",
            "response.content_part.added",
            "response.speak",
        ]
        deltas = p.of("response.output_audio.delta")
        for index in (
            types.index("response.output_audio.delta") + 2 * i for i in range(len(deltas))
        ):
            assert types[index] == "response.output_audio.delta"
            assert types[index + 1] == "response.output_audio_transcript.delta"
        assert types[-7:-1] == [
            "response.output_audio.done",
            "response.output_audio_transcript.done",
            "response.content_part.done",
            "response.output_item.done",
            "conversation.item.done",
            "response.done",
        ]
        rid = str(done["response_id"])
        assert re.fullmatch(rf"resp-{session_rid_prefix(p)}-0-[0-9a-f]{{8}}", rid)
        assert all(d["response_id"] == rid and d["item_id"] == f"item_{rid}" for d in deltas)
        assert {(d["format"], d["sample_rate_hz"]) for d in deltas} == {("pcm16", rate)}
        samples = sum(pcm(d).size for d in deltas)
        assert abs(samples - rate) <= rate * chunk_ms // 1000
        metadata = [d["metadata"] for d in deltas]
        durations = [m["audio_duration_ms"] for m in metadata if isinstance(m, dict)]
        assert durations == sorted(durations) and durations[-1] >= 990
        text = "".join(str(e["delta"]) for e in p.of("response.output_audio_transcript.delta"))
        assert text == p.of("response.output_audio_transcript.done")[0]["transcript"]
        assert "reply number 1" in text
        span = p.times[p.events.index(deltas[-1])] - p.times[p.events.index(deltas[0])]
        assert 0.7 * (1000 - chunk_ms) / 1000 <= span <= 1.6
        seqs = [e["server_event_seq"] for e in p.events[1:]]
        assert seqs == list(range(1, len(seqs) + 1))
        user = p.of("conversation.item.input_audio_transcription.completed")[0]
        assert re.fullmatch(r"\(\d+\.\d s of speech\)", str(user["transcript"]))


def session_rid_prefix(p: Peer) -> str:
    return str(session_of(p.events[0])["id"])


# ---- errors mid-session ----


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


# ---- overlap ----


async def test_barge_in_cuts_the_response_and_takes_the_turn() -> None:
    async with after_turn("duplex", reply_ms=3000) as p:
        first = await p.until("response.output_audio.delta")
        rid = first["response_id"]
        await p.speak(OVERLAP)
        decision = await p.until("overlap.decision", where=lambda e: e["action"] == "barge_in")
        assert decision["reason"] == "server_vad_speech_started" and decision["epoch"] == 0
        done = await p.until("response.done")
        response = done["response"]
        assert isinstance(response, dict) and response["id"] == rid
        assert response["status"] == "cancelled"
        assert response["status_details"] == {"type": "cancelled", "reason": "turn_detected"}
        cut = p.types()[p.events.index(decision) :]
        assert cut[:7] == [
            "overlap.decision",
            "response.output_audio.done",
            "response.output_audio_transcript.done",
            "response.content_part.done",
            "response.output_item.done",
            "conversation.item.done",
            "response.done",
        ]
        assert (await p.recv())["type"] == "rate_limits.updated"
        assert (await p.recv())["type"] == "input_audio_buffer.speech_started"
        second = await p.until("response.created")
        assert str(second["response_id"]).startswith(f"resp-{session_rid_prefix(p)}-1-")
        after_cut = p.events[p.events.index(done) :]
        assert not [
            e
            for e in after_cut
            if e["type"] == "response.output_audio.delta" and e["response_id"] == rid
        ]
        listens = [e for e in p.of("overlap.decision") if e["action"] == "listen"]
        assert all(e["reason"] == "accumulating_overlap_speech" for e in listens)


async def test_no_barge_in_listens_keeps_talking_then_answers_the_overlap() -> None:
    kind = "duplex-no-barge-in"
    async with after_turn(kind, reply_ms=2000) as p:
        first = await p.until("response.output_audio.delta")
        rid = first["response_id"]
        await p.speak(OVERLAP)
        decision = await p.until("overlap.decision")
        assert decision["action"] == "listen" and decision["reason"] == "barge_in_unsupported"
        committed = await p.until("input_audio_buffer.committed")
        details = committed["event"]
        assert isinstance(details, dict) and details["overlap_deferred"] is True
        done = await p.until("response.done")
        assert done["response_id"] == rid
        response = done["response"]
        assert isinstance(response, dict) and response["status"] == "completed"
        played = sum(
            pcm(d).size for d in p.of("response.output_audio.delta") if d["response_id"] == rid
        )
        assert abs(played - 2 * 22050) <= 1764
        assert not [e for e in p.of("overlap.decision") if e["action"] == "barge_in"]
        second = await p.until("response.created")
        assert second["response_id"] != rid
        await p.send({"type": "barge_in"})
        refused = await p.until("error")
        assert (
            isinstance(refused["error"], dict)
            and refused["error"]["code"] == "barge_in_unsupported"
        )


async def test_backchannel_below_overlap_threshold_does_not_cut() -> None:
    async with after_turn("duplex", reply_ms=2000) as p:
        await p.until("response.output_audio.delta")
        await p.speak(np.concatenate([vowel(220), silence(700)]))
        done = await p.until("response.done")
        assert isinstance(done["response"], dict) and done["response"]["status"] == "completed"
        assert not [e for e in p.of("overlap.decision") if e["action"] == "barge_in"]


async def test_ack_only_ownership_defers_and_refuses_create() -> None:
    options = ReferenceOptions(fidelity="lenient", strict_ack_ownership=True)
    async with after_turn("duplex", reply_ms=600, options=options) as p:
        done = await p.until("response.done")
        rid = str(done["response_id"])
        # Nothing acked: the assistant still owns the turn (sent_ms > committed_ms).
        await p.send({"type": "response.create"})
        refused = await p.until("error")
        assert isinstance(refused["error"], dict)
        assert refused["error"]["code"] == "response_already_active"
        await p.send({"type": "playback.ack", "played_ms": 600, "response_id": rid})
        ack = await p.until("playback.acknowledged")
        event = ack["event"]
        assert isinstance(event, dict) and event["item_id"] == f"item_{rid}"
        assert event["playback"] == {
            "generated_ms": 600,
            "sent_ms": 600,
            "played_ms": 600,
            "committed_ms": 600,
        }
        await p.send({"type": "response.create"})
        missing = await p.until("error")
        assert isinstance(missing["error"], dict)
        assert missing["error"]["code"] == "response_create_without_input"


# ---- cancel, truncate, playback ----


async def test_response_cancel_and_already_complete() -> None:
    async with after_turn("duplex", reply_ms=3000) as p:
        first = await p.until("response.output_audio.delta")
        await p.send({"type": "response.cancel", "response_id": "resp-other"})
        other = await p.until("error")
        assert isinstance(other["error"], dict)
        assert other["error"]["message"] == "Response is not active: resp-other"
        await p.send({"type": "response.cancel"})
        done = await p.until("response.done")
        assert isinstance(done["response"], dict)
        assert done["response"]["status_details"] == {
            "type": "cancelled",
            "reason": "client_cancelled",
        }
        await p.send({"type": "response.cancel", "event_id": "evt_x"})
        again = await p.until("error")
        assert again["error"] == {
            "type": "invalid_request_error",
            "code": "response_not_active",
            "message": f"Response is already complete: {first['response_id']}",
            "event_id": "evt_x",
        }


async def test_output_audio_buffer_clear_cancels_live_response() -> None:
    async with after_turn("duplex", reply_ms=3000) as p:
        first = await p.until("response.output_audio.delta")
        await p.send({"type": "output_audio_buffer.clear"})
        cleared = await p.until("output_audio_buffer.cleared")
        assert cleared["response_id"] == first["response_id"]
        done = await p.until("response.done")
        assert isinstance(done["response"], dict)
        assert done["response"]["status_details"] == {
            "type": "cancelled",
            "reason": "output_audio_buffer_clear",
        }


@pytest.mark.parametrize("faults", [frozenset(), frozenset({"ignore_truncate"})])
async def test_truncate_cuts_transcript_and_acknowledges(faults: frozenset[str]) -> None:
    options = ReferenceOptions(fidelity="lenient", faults=faults)
    async with after_turn("duplex", reply_ms=1000, options=options) as p:
        done = await p.until("response.done")
        rid = str(done["response_id"])
        full = p.of("response.output_audio_transcript.done")[0]["transcript"]
        await p.send(
            {
                "type": "conversation.item.truncate",
                "item_id": f"item_{rid}",
                "audio_end_ms": 300,
            }
        )
        truncated = await p.until("conversation.item.truncated")
        assert truncated["audio_end_ms"] == 300 and truncated["content_index"] == 0
        ack = await p.recv()
        assert ack["type"] == "playback.acknowledged"
        assert isinstance(ack["event"], dict) and ack["event"]["truncate"] is True
        await p.send({"type": "conversation.item.retrieve", "item_id": f"item_{rid}"})
        item = (await p.until("conversation.item.retrieved"))["item"]
        assert isinstance(item, dict) and isinstance(item["content"], list)
        kept = item["content"][0]["transcript"]
        if faults:
            assert kept == full
        else:
            assert kept and len(kept) < len(str(full)) and str(full).startswith(kept)
        await p.send(
            {
                "type": "conversation.item.truncate",
                "item_id": f"item_{rid}",
                "audio_end_ms": 99999,
            }
        )
        too_far = await p.until("error")
        assert isinstance(too_far["error"], dict)
        assert (
            too_far["error"]["message"]
            == "conversation.item.truncate audio_end_ms exceeds item audio duration"
        )
        await p.send(
            {"type": "conversation.item.truncate", "item_id": "item_nope", "audio_end_ms": 1}
        )
        missing = await p.until("error")
        assert isinstance(missing["error"], dict) and missing["error"]["code"] == "item_not_found"
        await p.send({"type": "conversation.item.truncate", "audio_end_ms": 1})
        no_id = await p.until("error")
        assert isinstance(no_id["error"], dict) and no_id["error"]["code"] == "missing_item_id"


async def test_playback_ack_errors() -> None:
    async with after_turn("duplex", reply_ms=600) as p:
        rid = str((await p.until("response.done"))["response_id"])
        await p.send(
            {"type": "playback.ack", "played_ms": 10, "response_id": rid, "item_id": "item_x"}
        )
        mismatch = await p.until("error")
        assert mismatch["error"] == {
            "type": "invalid_request_error",
            "code": "playback_item_mismatch",
            "message": "playback.ack item_id must match item_<response_id>.",
        }
        await p.send({"type": "playback.ack", "played_ms": 10, "response_id": "resp-unknown"})
        unknown = await p.until("error")
        assert (
            isinstance(unknown["error"], dict)
            and unknown["error"]["code"] == "playback_item_not_found"
        )
        await p.speak(TURN)
        await p.until("input_audio_buffer.committed")
        await p.send({"type": "playback.ack", "played_ms": 10, "response_id": rid})
        late = await p.until("error")
        assert isinstance(late["error"], dict) and late["error"]["code"] == "playback_ack_too_late"


async def test_an_ack_before_the_next_turn_keeps_later_acks_in_time() -> None:
    """vLLM-Omni's first ack of an answer reserves its place in the history; acks of
    it after the next turn is committed are then not too late
    (``engine/duplex/session/engine_session.py``, ``playback_ack_is_too_late``)."""
    async with after_turn("duplex", reply_ms=600) as p:
        rid = str((await p.until("response.done"))["response_id"])
        await p.send({"type": "playback.ack", "played_ms": 100, "response_id": rid})
        await p.until("playback.acknowledged")
        await p.speak(TURN)
        await p.until("input_audio_buffer.committed")
        await p.send({"type": "playback.ack", "played_ms": 600, "response_id": rid})
        acked = await p.until("playback.acknowledged")
        assert acked["event"]["played_ms"] == 600
        assert not [e for e in p.events if e.get("type") == "error"]


# ---- resume ----


async def test_resume_replays_exactly_once_after_a_drop() -> None:
    async with backend("duplex", reply_ms=1500) as (http, base):
        url = f"{base}/v1/realtime?duplex=1&model=m&autostart=0"
        async with peer(http, url) as old:
            await old.send({"type": "session.update", "session": {"model": "m"}})
            created = await opened(old)
            await old.speak(TURN)
            await old.until("response.output_audio.delta")
            last_seen = int(str(old.events[-1]["server_event_seq"]))
        await asyncio.sleep(0.5)  # detached: the model keeps talking into the journal
        async with peer(http, url) as new:
            await new.send(resume_request(created, last_seen))
            resumed = await new.recv()
            assert resumed["type"] == "session.resumed" and "server_event_seq" not in resumed
            assert list(resumed) == [
                "type",
                "event_id",
                "session_id",
                "session",
                "attachment_generation",
                "resume_token",
            ]
            assert (
                resumed["attachment_generation"] == 2
                and resumed["resume_token"] != created["resume_token"]
            )
            assert "object" not in session_of(resumed)  # raw public dict, no GA defaults
            await new.until("response.done")
            seqs = [int(str(e["server_event_seq"])) for e in new.events[1:]]
            assert seqs == list(range(last_seen + 1, last_seen + 1 + len(seqs)))
            everything = old.events[1:] + new.events[1:]
            audio = [e for e in everything if e["type"] == "response.output_audio.delta"]
            assert sum(pcm(d).size for d in audio) == pytest.approx(1.5 * 24000, abs=4800)
        async with peer(http, url) as stale:
            await stale.send(resume_request(created))
            refused = await stale.recv()
            assert refused["error"] == {
                "type": "invalid_request_error",
                "code": "invalid_resume_token",
                "message": "Invalid duplex session resume token",
            }
            assert await stale.closed() == 1000


async def test_takeover_replaces_the_old_socket() -> None:
    async with backend("duplex") as (http, base), peer(http, f"{base}/v1/duplex?model=m") as old:
        created = await opened(old)
        async with peer(http, f"{base}/v1/duplex?resume=1&model=m") as new:
            await new.send(resume_request(created, 1))
            assert (await new.recv())["type"] == "session.resumed"
            replaced = await old.recv()
            assert list(replaced) == ["type", "event_id", "session_id", "attachment_generation"]
            assert replaced["type"] == "session.replaced" and replaced["attachment_generation"] == 1
            assert await old.closed() == 1000
            assert old.close_reason == "session_replaced"
            await new.send({"type": "session.heartbeat"})
            assert (await new.recv())["server_event_seq"] == 2


async def test_event_ack_trims_so_resume_behind_it_needs_resync() -> None:
    async with backend("duplex") as (http, base):
        async with peer(http, f"{base}/v1/duplex?model=m") as p:
            created = await opened(p)
            await p.send({"type": "session.heartbeat"})
            await p.send({"type": "session.heartbeat"})
            await p.until("session.heartbeat_ack", where=lambda e: e["server_event_seq"] == 3)
            await p.send({"type": "session.event_ack", "server_event_seq": 2})
            await p.send({"type": "session.heartbeat"})
            await p.until("session.heartbeat_ack")
        sid = session_of(created)["id"]
        async with peer(http, f"{base}/v1/duplex") as late:
            await late.send(resume_request(created, 1))
            resync = await late.recv()
            assert list(resync) == ["type", "event_id", "session_id", "reason"]
            assert resync["type"] == "session.resync_required" and resync["reason"] == "journal_gap"
            assert await late.closed() == 1000
        cases = [
            (
                {"session_id": sid, "resume_token": "x", "last_received_server_event_seq": -1},
                "invalid_session_resume",
            ),
            ({"session_id": "duplex-gone", "resume_token": "x"}, "session_resume_expired"),
            (
                {
                    "session_id": sid,
                    "resume_token": created["resume_token"],
                    "last_received_server_event_seq": 99,
                },
                "session_resume_conflict",
            ),
        ]
        for request, code in cases:
            async with peer(http, f"{base}/v1/duplex") as p:
                await p.send({"type": "session.resume", **request})
                error = await p.recv()
                assert isinstance(error["error"], dict) and error["error"]["code"] == code


async def test_detached_session_expires_after_grace() -> None:
    options = ReferenceOptions(fidelity="lenient", disconnect_grace_s=0.2)
    async with backend("duplex", options=options) as (http, base):
        async with peer(http, f"{base}/v1/duplex?model=m") as p:
            created = await opened(p)
        await asyncio.sleep(0.5)
        async with peer(http, f"{base}/v1/duplex") as p:
            await p.send(resume_request(created))
            error = await p.recv()
            assert (
                isinstance(error["error"], dict)
                and error["error"]["code"] == "session_resume_expired"
            )


# ---- faults ----


async def test_fault_replay_duplicates_and_drops() -> None:
    for fault, check in (
        ("replay_duplicates", lambda seqs: len(seqs) != len(set(seqs))),
        ("replay_drops", lambda seqs: seqs != list(range(seqs[0], seqs[0] + len(seqs)))),
    ):
        options = ReferenceOptions(fidelity="lenient", faults=frozenset({fault}))
        async with backend("duplex", options=options) as (http, base):
            async with peer(http, f"{base}/v1/duplex?model=m") as p:
                created = await opened(p)
                for _ in range(4):
                    await p.send({"type": "session.heartbeat"})
                await p.until("session.heartbeat_ack", where=lambda e: e["server_event_seq"] == 5)
            async with peer(http, f"{base}/v1/duplex") as p:
                await p.send(resume_request(created, 1))
                assert (await p.recv())["type"] == "session.resumed"
                await p.send({"type": "session.heartbeat"})
                await p.until("session.heartbeat_ack", where=lambda e: e["server_event_seq"] == 6)
                seqs = [int(str(e["server_event_seq"])) for e in p.events[1:]]
                assert check(seqs), (fault, seqs)


async def test_fault_ignore_cancel_keeps_audio_flowing() -> None:
    options = ReferenceOptions(fidelity="lenient", faults=frozenset({"ignore_cancel"}))
    async with after_turn("duplex", reply_ms=1400, options=options) as p:
        first = await p.until("response.output_audio.delta")
        await p.send({"type": "response.cancel"})
        done = await p.until("response.done")
        assert isinstance(done["response"], dict) and done["response"]["status"] == "cancelled"
        late = await p.until("response.output_audio.delta")
        assert late["response_id"] == first["response_id"]


async def test_fault_deaf_while_speaking_never_barges_in() -> None:
    options = ReferenceOptions(fidelity="lenient", faults=frozenset({"deaf_while_speaking"}))
    async with after_turn("duplex", reply_ms=1500, options=options) as p:
        await p.until("response.output_audio.delta")
        await p.speak(OVERLAP)
        done = await p.until("response.done")
        assert isinstance(done["response"], dict) and done["response"]["status"] == "completed"
        assert not p.of("overlap.decision")


async def test_fault_starve_sessions_serialises_audio() -> None:
    options = ReferenceOptions(fidelity="lenient", faults=frozenset({"starve_sessions"}))
    async with backend("duplex", reply_ms=600, options=options) as (http, base):
        async with (
            peer(http, f"{base}/v1/realtime?model=m") as first,
            peer(http, f"{base}/v1/realtime?model=m") as second,
        ):
            await opened(first)
            await opened(second)
            await second.speak(TURN)
            await second.until("response.created")
            with pytest.raises(TimeoutError):
                await second.until("response.output_audio.delta", within_s=0.8)
            await first.send({"type": "session.close"})
            await first.until("session.closed")
            await second.until("response.output_audio.delta", within_s=3.0)


@pytest.mark.parametrize("unbounded", [False, True])
async def test_outbound_drops_a_client_that_stops_reading(unbounded: bool) -> None:
    dropped = asyncio.Event()
    outbounds: list[Outbound] = []

    async def flood(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        out = Outbound(
            ws, request.transport, max_bytes=None if unbounded else 1 << 20, on_drop=dropped.set
        )
        outbounds.append(out)
        blob = "x" * 65536
        for _ in range(400):  # ~26 MB, far past any socket buffer
            out.send_text(blob)
            await asyncio.sleep(0)
        await asyncio.sleep(1.0)
        await out.finish(0.1)
        return ws

    app = web.Application()
    app.router.add_get("/flood", flood)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        async with aiohttp.ClientSession() as http, http.ws_connect(f"ws://127.0.0.1:{port}/flood"):
            await asyncio.sleep(0.6)  # never read
            if unbounded:
                assert not dropped.is_set() and outbounds[0].queued_bytes > 4 << 20
            else:
                await asyncio.wait_for(dropped.wait(), 2.0)
                assert outbounds[0].dropped
    finally:
        await runner.cleanup()


# ---- the stand-in model's ears ----


def test_detector_hears_vowels_not_noise() -> None:
    detector = SpeechDetector(
        band_rms=0.006, snr=3.0, max_flatness=0.25, min_speech_ms=100, silence_ms=500
    )
    update = detector.feed(noise(2000, level=0.05).astype(np.float32) / 32768.0)
    assert update.events == ()
    update = detector.feed(np.concatenate([vowel(600), silence(700)]).astype(np.float32) / 32768.0)
    assert [kind for kind, _ in update.events] == [START, "stop"]


CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "dev"


@pytest.mark.skipif(not (CORPUS / "manifest.json").exists(), reason="speech corpus not present")
def test_detector_on_the_dev_corpus() -> None:
    import wave

    from shim.audio import StreamResampler

    manifest = json.loads((CORPUS / "manifest.json").read_text())
    for clip in manifest["clips"]:
        with wave.open(str(CORPUS / clip["file"])) as handle:
            samples = np.frombuffer(handle.readframes(handle.getnframes()), dtype="<i2").astype(
                np.int16
            )
        resampler = StreamResampler(manifest["rate_hz"], 16000)
        audio = np.concatenate([resampler.process(samples), resampler.flush(), silence(1000)])
        detector = SpeechDetector(
            band_rms=0.006, snr=3.0, max_flatness=0.25, min_speech_ms=100, silence_ms=500
        )
        starts = [
            ms
            for kind, ms in detector.feed(audio.astype(np.float32) / 32768.0).events
            if kind == START
        ]
        expected = 0 if clip["kind"] == "noise" else 1
        assert len(starts) == expected, clip["file"]


# ---- more of the command surface ----


async def test_explicit_commit_paths_and_declared_input_rate() -> None:
    async with (
        backend("duplex", reply_ms=400) as (http, base),
        peer(http, f"{base}/v1/duplex?autostart=0") as p,
    ):
        await p.send(
            {
                "type": "session.update",
                "session": {
                    "model": "m",
                    "audio": {"input": {"format": {"type": "audio/pcm", "rate": 24000}}},
                },
            }
        )
        session = session_of(await opened(p))
        assert session["audio"] == {"input": {"format": {"type": "audio/pcm", "rate": 24000}}}
        # Silence then commit: a non-speech commit, committed without a response.
        for chunk in chunks(silence(300, rate_hz=24000), rate_hz=24000):
            await p.send({"type": "input_audio_buffer.append", "audio": b64encode(chunk)})
        await p.send({"type": "input_audio_buffer.commit"})
        committed = await p.until("input_audio_buffer.committed")
        details = committed["event"]
        assert isinstance(details, dict) and details["no_response"] is True
        # Speech at the declared 24 kHz, committed without a response, answered on request.
        for chunk in chunks(vowel(400, rate_hz=24000), rate_hz=24000):
            await p.send({"type": "input_audio_buffer.append", "audio": b64encode(chunk)})
        await p.send({"type": "input_audio_buffer.commit", "response_create": False})
        stopped = await p.until("input_audio_buffer.speech_stopped")
        assert stopped["audio_end_ms"] == 0
        heard = await p.until("conversation.item.input_audio_transcription.completed")
        assert heard["transcript"] == "(0.4 s of speech)"
        await p.until("conversation.item.done")
        assert await no_event(p, "response.created", 0.4)
        await p.send({"type": "response.create", "response": {"temperature": 0.2}})
        refused = await p.until("error")
        assert isinstance(refused["error"], dict)
        assert refused["error"]["code"] == "unsupported_native_response_options"
        await p.send({"type": "response.create"})
        await p.until("response.created")
        done = await p.until("response.done")
        assert isinstance(done["response"], dict) and done["response"]["status"] == "completed"
        await p.send({"type": "input.text.append", "text": "hi", "event_id": "evt_t"})
        text = await p.until("error")
        assert isinstance(text["error"], dict)
        assert text["error"]["code"] == "native_text_append_unsupported"
        assert text["error"]["event_id"] == "evt_t"


async def no_event(p: Peer, kind: str, seconds: float) -> bool:
    try:
        await p.until(kind, within_s=seconds)
    except TimeoutError:
        return True
    return False


async def test_no_barge_in_truncate_is_accepted_like_the_real_runner() -> None:
    # supports_audio_truncate is false for Nemotron, but 0.30.0's runner never checks it:
    # conversation.item.truncate answers truncated + playback.acknowledged on every model.
    kind = "duplex-no-barge-in"
    async with after_turn(kind, reply_ms=480, path="/v1/duplex?model=m") as p:
        rid = str((await p.until("response.done"))["response_id"])
        await p.send(
            {"type": "conversation.item.truncate", "item_id": f"item_{rid}", "audio_end_ms": 160}
        )
        assert (await p.until("conversation.item.truncated"))["audio_end_ms"] == 160
        assert (await p.recv())["type"] == "playback.acknowledged"


async def test_journal_overflow_is_sticky() -> None:
    options = ReferenceOptions(fidelity="lenient", replay_max_bytes=6000)
    async with backend("duplex", options=options) as (http, base):
        async with peer(http, f"{base}/v1/duplex?model=m") as p:
            created = await opened(p)
            for _ in range(40):
                await p.send({"type": "session.heartbeat"})
            notice = await p.until("session.resync_required")
            assert notice["reason"] == "journal_overflow" and "server_event_seq" not in notice
            after = await p.recv()
            assert after["type"] == "session.heartbeat_ack" and "server_event_seq" not in after
        async with peer(http, f"{base}/v1/duplex") as p:
            await p.send(resume_request(created, 1))
            resync = await p.recv()
            assert resync["type"] == "session.resync_required" and resync["reason"] == "journal_gap"


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


async def test_receive_idle_timeout_detaches() -> None:
    async with backend("duplex") as (http, base):
        async with peer(http, f"{base}/v1/duplex?autostart=0") as p:
            await p.send(
                {"type": "session.update", "session": {"model": "m", "idle_timeout_s": 0.3}}
            )
            created = await opened(p)
            assert session_of(created)["idle_timeout_s"] == 0.3
            assert await p.closed() == 1000
        async with peer(http, f"{base}/v1/duplex") as p:
            await p.send(resume_request(created, 1))
            assert (await p.recv())["type"] == "session.resumed"
