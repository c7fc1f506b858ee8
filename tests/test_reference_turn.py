"""The turn-based reference backend (vLLM-Omni without a duplex adapter) on a real socket.

Expectations (``docs/protocol.md``, "What the proxy speaks upstream"): upstream
vLLM's ``RealtimeConnection`` plus vLLM-Omni's audio-output ``_run_generation``.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import aiohttp
import numpy as np
import pytest
from aiohttp import WSMsgType

from proxy.reference import ReferenceOptions, build_reference_app, running_reference_backend
from shim.audio import b64encode
from tests.testaudio import chunks, silence, vowel

pytestmark = pytest.mark.timeout(60)

SPEECH = np.concatenate([vowel(600), silence(200)])


@asynccontextmanager
async def backend(**kwargs: object) -> AsyncIterator[tuple[aiohttp.ClientSession, str]]:
    async with running_reference_backend("turn", **kwargs) as base:  # type: ignore[arg-type]
        async with aiohttp.ClientSession() as http:
            yield http, base.replace("http://", "ws://")


class Peer:
    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws
        self.frames: list[str] = []
        self.times: list[float] = []

    async def recv_raw(self, within_s: float = 5.0) -> str:
        msg = await self.ws.receive(timeout=within_s)
        assert msg.type == WSMsgType.TEXT, (msg.type, msg.data)
        self.frames.append(msg.data)
        self.times.append(time.monotonic())
        return str(msg.data)

    async def recv(self, within_s: float = 5.0) -> dict[str, object]:
        event: dict[str, object] = json.loads(await self.recv_raw(within_s))
        return event

    async def send(self, event: dict[str, object]) -> None:
        await self.ws.send_str(json.dumps(event))

    async def silent_for(self, seconds: float) -> bool:
        try:
            msg = await self.ws.receive(timeout=seconds)
        except TimeoutError:
            return True
        self.frames.append(str(msg.data))
        return False

    async def append(self, audio: np.ndarray) -> None:
        for chunk in chunks(audio, chunk_ms=100):
            await self.send({"type": "input_audio_buffer.append", "audio": b64encode(chunk)})

    async def say(self, audio: np.ndarray) -> None:
        """One turn as vLLM-Omni's client sends it: open, the audio, final commit."""
        await self.send({"type": "input_audio_buffer.commit", "final": False})
        await self.append(audio)
        await self.send({"type": "input_audio_buffer.commit", "final": True})

    async def until(self, kind: str, within_s: float = 8.0) -> dict[str, object]:
        deadline = time.monotonic() + within_s
        while True:
            event = await self.recv(max(0.01, deadline - time.monotonic()))
            if event["type"] == kind:
                return event


@asynccontextmanager
async def connected(http: aiohttp.ClientSession, url: str) -> AsyncIterator[Peer]:
    async with http.ws_connect(url) as ws:
        yield Peer(ws)


def test_unknown_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown reference backend kind"):
        build_reference_app("half-duplex")
    with pytest.raises(ValueError, match="unknown reference faults"):
        ReferenceOptions(faults=frozenset({"gremlins"}))


async def test_session_created_is_flat_and_immediate() -> None:
    async with backend() as (http, base), connected(http, f"{base}/v1/realtime?model=ignored") as p:
        raw = await p.recv_raw()
        created = json.loads(raw)
        assert list(created) == ["type", "id", "created"]
        assert created["type"] == "session.created"
        assert re.fullmatch(r"sess-[0-9a-f]{16}", created["id"])
        assert abs(created["created"] - time.time()) < 5
        assert raw.startswith('{"type":"session.created","id":"sess-')


VAD_OFF = '{"type":"error","code":"unsupported","error":"VAD realtime is not enabled"}'
NO_DUPLEX = '{"type":"error","error":"Duplex API is not available","code":"unsupported"}'


@pytest.mark.parametrize(
    ("path", "refusal", "close_code"),
    [
        ("/v1/realtime?duplex=1", VAD_OFF, 1008),
        ("/v1/realtime?duplex=TRUE", VAD_OFF, 1008),
        ("/v1/realtime?duplex=on", VAD_OFF, 1008),
        ("/v1/duplex", NO_DUPLEX, 1000),
    ],
    ids=["duplex-query-1", "duplex-query-TRUE", "duplex-query-on", "duplex-route"],
)
async def test_a_duplex_request_is_refused_then_closed(
    path: str, refusal: str, close_code: int
) -> None:
    async with backend() as (http, base), connected(http, f"{base}{path}") as p:
        assert await p.recv_raw() == refusal
        msg = await p.ws.receive(timeout=5)
        assert msg.type == WSMsgType.CLOSE and p.ws.close_code == close_code


async def test_duplex_yes_is_not_a_duplex_request() -> None:
    async with backend() as (http, base), connected(http, f"{base}/v1/realtime?duplex=yes") as p:
        assert (await p.recv())["type"] == "session.created"


async def test_errors_have_the_flat_turn_based_shape() -> None:
    async with (
        backend(served_model="served") as (http, base),
        connected(http, f"{base}/v1/realtime") as p,
    ):
        await p.recv()

        async def error_for(event: object) -> dict[str, object]:
            await p.ws.send_str(event if isinstance(event, str) else json.dumps(event))
            raw = await p.recv_raw()
            error: dict[str, object] = json.loads(raw)
            assert list(error) == ["type", "error", "code"] and error["type"] == "error"
            return error

        assert await error_for("{nope") == {
            "type": "error",
            "error": "Invalid JSON",
            "code": "invalid_json",
        }
        assert await error_for({"type": "input_audio_buffer.commit", "final": False}) == {
            "type": "error",
            "error": "Model not validated. Make sure to validate the model "
            "by sending a session.update event.",
            "code": "model_not_validated",
        }
        assert await error_for({"type": "session.update"}) == {
            "type": "error",
            "error": "Missing required field: model",
            "code": "invalid_event",
        }
        assert await error_for({"type": "session.update", "session": {"model": "served"}}) == {
            "type": "error",
            "error": "Missing required field: model",
            "code": "invalid_event",
        }
        assert await error_for({"type": "session.update", "model": "other"}) == {
            "type": "error",
            "error": "The model `other` does not exist.",
            "code": "model_not_found",
        }
        for bad_audio in ("", "AA==", "***"):
            assert (await error_for({"type": "input_audio_buffer.append", "audio": bad_audio}))[
                "code"
            ] == "invalid_audio"
        assert (await error_for({"type": "input_audio_buffer.append"}))[
            "code"
        ] == "processing_error"
        assert await error_for({"type": "response.cancel"}) == {
            "type": "error",
            "error": "Unknown event type: response.cancel",
            "code": "unknown_event",
        }
        await p.send({"type": "session.update", "model": "served"})
        assert await p.silent_for(0.3)  # no reply on success
        assert (await error_for({"type": "input_audio_buffer.commit", "final": "maybe"}))[
            "code"
        ] == "processing_error"


async def test_a_turn_streams_text_and_audio_in_real_time() -> None:
    async with backend(reply_ms=1000) as (http, base), connected(http, f"{base}/v1/realtime") as p:
        await p.recv()
        await p.send({"type": "session.update", "model": "any"})
        await p.say(SPEECH)
        done = await p.until("transcription.done", within_s=5)
        last = json.loads(await p.recv_raw())
        assert p.frames[-1] == '{"type": "response.output_audio.done", "has_audio": true}'
        assert last == {"type": "response.output_audio.done", "has_audio": True}
        events = [json.loads(f) for f in p.frames]
        audio = [(i, e) for i, e in enumerate(events) if e["type"] == "response.output_audio.delta"]
        texts = [e["delta"] for e in events if e["type"] == "transcription.delta"]
        for index, event in audio:
            assert list(event) == ["type", "audio", "format", "sample_rate_hz"]
            assert event["format"] == "pcm16" and event["sample_rate_hz"] == 24000
            assert p.frames[index].startswith('{"type": "response.output_audio.delta", "audio": "')
        samples = sum(len(base64.b64decode(e["audio"])) // 2 for _, e in audio)
        assert samples == 24000
        assert "".join(texts) == done["text"] and all(texts)
        assert re.fullmatch(
            r"I heard about 0\.8 seconds of audio\. "
            r"This is the reference turn-based backend, reply number 1\.",
            str(done["text"]),
        )
        usage = done["usage"]
        assert isinstance(usage, dict)
        assert list(usage) == [
            "prompt_tokens",
            "total_tokens",
            "completion_tokens",
            "prompt_tokens_details",
            "completion_tokens_details",
        ]
        assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]  # type: ignore[operator]
        span = p.times[audio[-1][0]] - p.times[audio[0][0]]
        assert 0.7 <= span <= 1.5


async def test_second_open_commit_is_ignored_and_late_audio_dropped() -> None:
    async with backend(reply_ms=600) as (http, base), connected(http, f"{base}/v1/realtime") as p:
        await p.recv()
        await p.send({"type": "session.update", "model": "any"})
        await p.say(SPEECH)
        await p.until("transcription.delta")
        await p.send({"type": "input_audio_buffer.commit", "final": False})  # ignored: generating
        await p.append(vowel(2000))  # arrives mid-reply: dropped when the queue is cleared
        first = await p.until("transcription.done")
        assert (await p.recv())["type"] == "response.output_audio.done"
        assert await p.silent_for(0.5)
        await p.say(vowel(300))
        second = await p.until("transcription.done")
        assert "reply number 1" in str(first["text"])
        assert "0.3 seconds" in str(second["text"]) and "reply number 2" in str(second["text"])


async def test_silent_turn_still_gets_reply_audio() -> None:
    async with backend(reply_ms=300) as (http, base), connected(http, f"{base}/v1/realtime") as p:
        await p.recv()
        await p.send({"type": "session.update", "model": "any"})
        await p.send({"type": "input_audio_buffer.commit", "final": False})
        await p.send({"type": "input_audio_buffer.commit", "final": True})
        await p.until("transcription.done")
        audio = [json.loads(f) for f in p.frames if '"response.output_audio.delta"' in f]
        pcm = np.concatenate(
            [np.frombuffer(base64.b64decode(a["audio"]), dtype="<i2") for a in audio]
        )
        assert pcm.size == 7200 and np.abs(pcm).max() > 500


async def test_binary_frame_drops_the_connection_without_close_frame() -> None:
    async with backend() as (http, base), connected(http, f"{base}/v1/realtime") as p:
        await p.recv()
        await p.ws.send_bytes(b"\x01\x02")
        msg = await p.ws.receive(timeout=5)
        assert msg.type in (WSMsgType.CLOSED, WSMsgType.ERROR)
        assert p.ws.close_code == 1006


async def test_disconnect_mid_reply_cancels_generation() -> None:
    async with backend(reply_ms=3000) as (http, base):
        async with connected(http, f"{base}/v1/realtime") as p:
            await p.recv()
            await p.send({"type": "session.update", "model": "any"})
            await p.say(SPEECH)
            await p.until("response.output_audio.delta")
        await asyncio.sleep(0.2)
        tasks = [t for t in asyncio.all_tasks() if t.get_name() == "reference-turn-generation"]
        assert not tasks
        async with connected(http, f"{base}/v1/realtime") as p:  # the backend is still healthy
            assert (await p.recv())["type"] == "session.created"


async def test_starve_sessions_fault_holds_the_second_connection() -> None:
    options = ReferenceOptions(faults=frozenset({"starve_sessions"}))
    async with backend(reply_ms=300, options=options) as (http, base):
        async with (
            connected(http, f"{base}/v1/realtime") as first,
            connected(http, f"{base}/v1/realtime") as second,
        ):
            await first.recv()
            await second.recv()
            await second.send({"type": "session.update", "model": "any"})
            await second.say(SPEECH)
            assert await second.silent_for(0.8)
            await first.ws.close()
            await second.until("transcription.done", within_s=3)
