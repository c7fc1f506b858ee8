"""The official ``openai`` SDK (GA realtime) against the proxy, in every mode.

A GA client waits for ``session.created`` before it sends anything, and the SDK
parses server events into its generated types (leniently: unknown types and extra
fields survive). These tests drive the SDK exactly as an application would.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from openai import AsyncOpenAI
from openai.resources.realtime.realtime import AsyncRealtimeConnection
from openai.types.realtime import RealtimeServerEvent
from pydantic import TypeAdapter

from proxy.reference.options import ReferenceOptions
from tests.corpus import CORPUS
from tests.servers import load_clip, proxy, proxy_config, reference, silence

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


@pytest.mark.parametrize(("kind", "mode"), MODES)
async def test_sdk_spoken_turn_with_server_vad(kind: str, mode: str) -> None:
    async with sdk_connection(kind) as conn:
        created = await first_session_created(conn)
        assert created["session"]["capabilities"]["proxy"]["mode"] == mode
        await conn.session.update(session=pcm_session())
        await append_audio(conn, load_clip("utt05_clean.wav") + silence(1000))
        events = await events_until_response_done(conn)
        kinds = [e["type"] for e in events]
        assert "session.updated" in kinds
        assert_completed_with_audio(events)


async def push_to_talk(conn: AsyncRealtimeConnection) -> dict[str, Any]:
    """Server VAD off; the session.updated that answers it."""
    await conn.session.update(session=pcm_session(turn_detection=None))
    return as_dict(await conn.recv())


async def pressed_turn(conn: AsyncRealtimeConnection, clip: str = "utt04_clean.wav") -> None:
    """Push-to-talk on, then one turn pressed whole: appended, committed, answer asked."""
    assert (await push_to_talk(conn))["type"] == "session.updated"
    await append_audio(conn, load_clip(clip))
    await conn.input_audio_buffer.commit()
    await conn.response.create()


def heard_seconds(events: list[dict[str, Any]]) -> float:
    """How much of the turn the reference backend got (its answer's transcript says)."""
    [done] = [e for e in events if e["type"] == "response.output_audio_transcript.done"]
    found = re.search(r"I heard about ([0-9.]+) seconds", done["transcript"])
    assert found, done["transcript"]
    return float(found.group(1))


@pytest.mark.parametrize(("kind", "mode"), MODES)
async def test_sdk_push_to_talk(kind: str, mode: str) -> None:
    """Server VAD off: the client commits its turn and asks for the response itself."""
    async with sdk_connection(kind) as conn:
        created = await first_session_created(conn)
        assert created["session"]["capabilities"]["proxy"]["mode"] == mode
        updated = await push_to_talk(conn)
        assert updated["type"] == "session.updated", updated
        assert updated["session"]["audio"]["input"]["turn_detection"] is None
        # With VAD off a trailing silence must not end the turn on its own.
        await append_audio(conn, load_clip("utt04_clean.wav") + silence(1000))
        await conn.input_audio_buffer.commit()
        await conn.response.create()
        events = await events_until_response_done(conn)
        kinds = [e["type"] for e in events]
        assert "input_audio_buffer.speech_started" not in kinds, "no server VAD events"
        assert "input_audio_buffer.committed" in kinds
        assert kinds.count("response.created") == 1
        assert kinds.index("input_audio_buffer.committed") < kinds.index("response.created")
        assert_completed_with_audio(events)


@pytest.mark.parametrize(("kind", "mode"), MODES)
async def test_sdk_push_to_talk_while_the_answer_still_plays(kind: str, mode: str) -> None:
    """The next turn pressed while the answer still plays, the client neither cancelling
    nor truncating it: the whole turn is committed and answered (a duplex upstream only
    acknowledges a commit while its answer is unacknowledged, docs/fidelity.md row 1a)."""
    clip = load_clip("utt05_clean.wav")
    async with sdk_connection(kind, reply_ms=3000) as conn:
        await first_session_created(conn)
        await pressed_turn(conn)
        assert_completed_with_audio(await events_until_response_done(conn))
        # At once: 3 s of answer are still to play on the client.
        await append_audio(conn, clip)
        await conn.input_audio_buffer.commit()
        await conn.response.create()
        second = await events_until_response_done(conn)
        assert "input_audio_buffer.committed" in [e["type"] for e in second]
        assert_completed_with_audio(second)
        assert abs(heard_seconds(second) - len(clip) / (2 * RATE)) <= 0.15


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


# The turn pressed over the answer: while the upstream still generates it, the client
# cancels it and truncates it where its playback stopped (the common GA flow), or just
# talks over it; once it is generated (so no response is active for the client) and
# still plays, the client truncates it, or cancels it too late (refused, as OpenAI
# refuses it) and truncates it.
PTT_FLOWS = ["cancel", "talk-over", "truncate", "late-cancel"]
# ~0.9 s and ~3.2 s: a duplex upstream that hears a turn over an answer in progress
# drops a short one as an interjection (docs/fidelity.md row 1a).
PTT_TURNS = [("short", 900), ("long", None)]


@pytest.mark.parametrize(("kind", "mode"), MODES[:2])
@pytest.mark.parametrize(("length", "cut_ms"), PTT_TURNS)
@pytest.mark.parametrize("flow", PTT_FLOWS)
async def test_sdk_push_to_talk_over_an_answer(
    kind: str, mode: str, length: str, cut_ms: int | None, flow: str
) -> None:
    """The whole turn reaches the upstream and is answered, whatever the answer was
    doing when the button was pressed; the client sees GA events only, no error."""
    clip = load_clip("utt05_clean.wav")
    if cut_ms is not None:
        clip = clip[: RATE * 2 * cut_ms // 1000]
    async with sdk_connection(kind, reply_ms=3000) as conn:
        await first_session_created(conn)
        await pressed_turn(conn)
        delta = await until_answer_streams(conn)
        if flow == "cancel":
            await conn.response.cancel()
        if flow in ("truncate", "late-cancel"):
            assert_completed_with_audio(await events_until_response_done(conn))
        if flow == "late-cancel":
            await conn.response.cancel()
            refused = await refusal(conn)
            assert refused["error"]["code"] == "response_cancel_not_active", refused
        if flow != "talk-over":
            await conn.conversation.item.truncate(
                item_id=delta["item_id"], content_index=0, audio_end_ms=100
            )
        await append_audio(conn, clip)
        await conn.input_audio_buffer.commit()
        await conn.response.create()
        events = await events_until_answered(conn, delta["response_id"])
        kinds = [e["type"] for e in events]
        assert "input_audio_buffer.committed" in kinds, kinds
        assert_completed_with_audio(events)
        last = max(n for n, e in enumerate(events) if e["type"] == "response.created")
        assert abs(heard_seconds(events[last:]) - len(clip) / (2 * RATE)) <= 0.15, kinds


async def speak(conn: AsyncRealtimeConnection, pcm: bytes) -> None:
    """``pcm`` as a microphone sends it: in real time."""
    step = RATE * 2 * CHUNK_MS // 1000
    for i in range(0, len(pcm), step):
        await conn.input_audio_buffer.append(audio=base64.b64encode(pcm[i : i + step]).decode())
        await asyncio.sleep(CHUNK_MS / 1000)


TOLD = ("speech_started", "speech_stopped", "committed")


def speech_seconds(name: str) -> float:
    """From the first labelled speech of a corpus clip to its last (its manifest)."""
    clips = json.loads((CORPUS / "manifest.json").read_text())["clips"]
    [spans] = [c["speech_ms"] for c in clips if c["file"] == name]
    return float(spans[-1][1] - spans[0][0]) / 1000


@pytest.mark.parametrize(("kind", "mode"), MODES)
async def test_sdk_speech_over_an_answer_not_interrupting(kind: str, mode: str) -> None:
    """GA ``interrupt_response: false``: speech wholly over the answer, spoken in real
    time, does not cut it, but is still the user's turn, answered once it is done."""
    clip = load_clip("utt05_clean.wav")
    vad = {"type": "server_vad", "interrupt_response": False}
    async with sdk_connection(kind, reply_ms=8000) as conn:
        created = await first_session_created(conn)
        assert created["session"]["capabilities"]["proxy"]["mode"] == mode
        await conn.session.update(session=pcm_session(turn_detection=vad))
        await append_audio(conn, load_clip("utt04_clean.wav") + silence(1000))
        first = await until_answer_streams(conn)
        await speak(conn, silence(300) + clip + silence(1000))
        events = await events_until_answered(conn, first["response_id"])
        kinds = [e["type"] for e in events]
        short = str([k for k in kinds if "delta" not in k])
        done = kinds.index("response.done")
        assert events[done]["response"]["id"] == first["response_id"], short
        assert events[done]["response"]["status"] == "completed", short
        assert "conversation.item.truncated" not in kinds, short
        # The user's turn told as GA tells it (during the answer or after it), answered
        # only after the answer is done.
        told = [kinds.index(f"input_audio_buffer.{name}") for name in TOLD]
        assert told == sorted(told), short
        assert "response.created" in kinds[done:], short
        assert_completed_with_audio(events)
        # The upstream heard the whole turn: all its labelled speech.
        assert heard_seconds(events[done:]) >= speech_seconds("utt05_clean.wav"), short
