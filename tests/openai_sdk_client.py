"""The official ``openai`` SDK's GA realtime connection to the proxy, and reading it.

``sdk_connection`` puts the proxy in front of a reference backend and connects the SDK
to it; the readers take the events as the SDK parses them, each checked against the
SDK's own GA types (``GA_EVENTS``), up to the one a test waits for.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from openai import AsyncOpenAI
from openai.resources.realtime.realtime import AsyncRealtimeConnection
from openai.types.realtime import RealtimeServerEvent
from pydantic import TypeAdapter

from proxy.reference.options import ReferenceOptions
from tests.servers import proxy, proxy_config, reference

RATE = 24000
CHUNK_MS = 40
GA_EVENTS: TypeAdapter[Any] = TypeAdapter(RealtimeServerEvent)


def as_dict(event: Any) -> dict[str, Any]:
    """An SDK event (a model, or a plain dict for types it does not know) as a dict."""
    if isinstance(event, dict):
        return event
    # warnings=False: the SDK constructs events without validation, so a value outside
    # its Literal types (a passthrough upstream declaring 16 kHz input, where GA types
    # say 24000) survives parsing but makes pydantic warn when serialising it back.
    data: dict[str, Any] = event.to_dict(warnings=False)
    return data


@asynccontextmanager
async def sdk_connection(kind: str, reply_ms: int = 800) -> AsyncIterator[AsyncRealtimeConnection]:
    """The proxy in front of a ``kind`` reference backend, reached through the SDK."""
    strict = ReferenceOptions(fidelity="strict")  # behaves like vLLM-Omni 0.30.0
    async with reference(kind, reply_ms=reply_ms, options=strict) as upstream:
        async with proxy(proxy_config({"m": upstream})) as base:
            port = int(base.rsplit(":", 1)[1])
            async with AsyncOpenAI(
                api_key="test", websocket_base_url=f"ws://127.0.0.1:{port}/v1"
            ) as client:
                async with client.realtime.connect(model="m") as conn:
                    yield conn


def pcm_session(**input_settings: Any) -> dict[str, Any]:
    """A GA ``session.update``'s session: 24 kHz PCM input, with ``input_settings``."""
    pcm = {"type": "audio/pcm", "rate": RATE}
    return {"type": "realtime", "audio": {"input": {"format": pcm, **input_settings}}}


async def append_audio(conn: AsyncRealtimeConnection, pcm: bytes) -> None:
    step = RATE * 2 * CHUNK_MS // 1000
    for i in range(0, len(pcm), step):
        await conn.input_audio_buffer.append(audio=base64.b64encode(pcm[i : i + step]).decode())


async def events_until_response_done(conn: AsyncRealtimeConnection) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    async for event in conn:
        events.append(as_dict(event))
        GA_EVENTS.validate_python(events[-1])  # the GA type, values included
        assert event.type != "error", f"unexpected error event: {as_dict(event)}"
        if event.type == "response.done":
            return events
    raise AssertionError(
        f"connection ended before response.done; got {[e['type'] for e in events]}"
    )


async def first_session_created(conn: AsyncRealtimeConnection) -> dict[str, Any]:
    """A GA client waits: the proxy must send session.created unprompted."""
    event = await conn.recv()
    assert event.type == "session.created", as_dict(event)
    return as_dict(event)


def assert_completed_with_audio(events: list[dict[str, Any]]) -> None:
    deltas = [e for e in events if e["type"] == "response.output_audio.delta"]
    assert deltas, f"no audio deltas in {[e['type'] for e in events]}"
    total = 0
    for delta in deltas:
        pcm = base64.b64decode(delta["delta"], validate=True)
        assert pcm and len(pcm) % 2 == 0, "PCM16 deltas hold whole 16-bit samples"
        total += len(pcm)
    assert total >= RATE * 2 // 10, "at least 100 ms of reply audio"
    done = events[-1]
    assert done["type"] == "response.done"
    assert done["response"]["status"] == "completed", done["response"]


# A GA client gets barge_in_emulated even over a duplex upstream that can barge in
# (shim/capabilities.py): the proxy decides barge-in and acknowledges playback.
MODES = [
    ("duplex", "barge_in_emulated"),
    ("duplex-no-barge-in", "barge_in_emulated"),
    ("turn", "duplex_emulated"),
]


async def events_for(conn: AsyncRealtimeConnection, seconds: float) -> list[dict[str, Any]]:
    """Every event of the next ``seconds``, each checked against the GA types."""
    events: list[dict[str, Any]] = []
    try:
        async with asyncio.timeout(seconds):
            async for event in conn:
                events.append(as_dict(event))
                GA_EVENTS.validate_python(events[-1])
    except TimeoutError:
        pass
    return events


async def until(conn: AsyncRealtimeConnection, kind: str) -> list[dict[str, Any]]:
    """Events up to the first of ``kind``, each checked against the GA types."""
    events: list[dict[str, Any]] = []
    async with asyncio.timeout(20):
        async for event in conn:
            events.append(as_dict(event))
            GA_EVENTS.validate_python(events[-1])
            if events[-1]["type"] == kind:
                return events
    raise AssertionError(f"connection ended before {kind}: {[e['type'] for e in events]}")


async def until_answer_streams(conn: AsyncRealtimeConnection, deltas: int = 3) -> dict[str, Any]:
    """Events until the answer's ``deltas``-th audio delta, which is returned: the
    stand-in still generates the rest in real time."""
    async for event in conn:
        ev = as_dict(event)
        GA_EVENTS.validate_python(ev)
        assert event.type != "error", ev
        if event.type == "response.output_audio.delta":
            deltas -= 1
            if deltas == 0:
                return ev
    raise AssertionError("connection ended before the answer streamed")


async def events_until_answered(
    conn: AsyncRealtimeConnection, previous: str
) -> list[dict[str, Any]]:
    """Events (GA, no error) until the ``response.done`` of a response after ``previous``."""
    events: list[dict[str, Any]] = []
    while True:
        events += await events_until_response_done(conn)
        if events[-1]["response"]["id"] != previous:
            return events


async def refusal(conn: AsyncRealtimeConnection) -> dict[str, Any]:
    """The next error event (GA, like every event before it)."""
    async for event in conn:
        ev = as_dict(event)
        GA_EVENTS.validate_python(ev)
        if event.type == "error":
            return ev
    raise AssertionError("connection ended before the error")
