"""The ``openai`` SDK and the Agents SDK restating their voice, and changing their
instructions, through the proxy over the strict duplex stand-in, which refuses a whole
``session.update`` naming a voice once it has output audio, or changing the
instructions once it has taken in audio, as vLLM-Omni 0.30.0 does
(``engine/duplex/config.py``, ``apply_realtime_update``; ``engine/duplex/session/
control.py``, ``on_session_update``). The same voice again is not named upstream and
the update applies; a changed voice, or changed instructions, are refused to the client
with GA's path while the rest applies (``shim/dialects/ga_voice.py``,
``shim/dialects/ga_instructions.py``)."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from agents.realtime import RealtimeAgent, RealtimeRunner
from openai import AsyncOpenAI
from openai.resources.realtime.realtime import AsyncRealtimeConnection

from proxy.reference.options import ReferenceOptions
from tests.openai_sdk_client import (
    GA_EVENTS,
    append_audio,
    as_dict,
    events_until_response_done,
    first_session_created,
    pcm_session,
)
from tests.servers import load_clip, proxy, proxy_config, reference, silence, ws_url
from tests.upstream_tap import upstream_tap

ANSWERS = ("session.updated", "error")


def voiced(voice: str, instructions: str) -> dict[str, Any]:
    session = pcm_session()
    session["audio"]["output"] = {"voice": voice}
    return {**session, "instructions": instructions}


async def told(conn: AsyncRealtimeConnection) -> list[dict[str, Any]]:
    """What the client is told of its update (its errors), up to its session.updated."""
    events: list[dict[str, Any]] = []
    async with asyncio.timeout(15):
        async for event in conn:
            GA_EVENTS.validate_python(as_dict(event))
            if event.type in ANSWERS:
                events.append(as_dict(event))
            if event.type == "session.updated":
                return events
    raise AssertionError(events)


def drain(answered: asyncio.Queue[dict[str, Any]]) -> None:
    """Pass over the stand-in's answers to the updates before the next one."""
    while not answered.empty():
        answered.get_nowait()


async def answer_to(answered: asyncio.Queue[dict[str, Any]], asked: str) -> dict[str, Any]:
    """The stand-in's answer to the update asking for ``asked`` instructions: its error,
    or its session.updated with them (earlier updates' answers passed over)."""
    async with asyncio.timeout(15):
        while True:
            ev = await answered.get()
            if ev["type"] == "error" or ev["session"].get("instructions") == asked:
                return ev


async def test_a_restated_voice_applies_and_a_changed_one_is_refused_alone() -> None:
    strict = ReferenceOptions(fidelity="strict")
    async with reference("duplex", reply_ms=800, options=strict) as backend:
        async with (
            upstream_tap(backend) as (tap, tapped),
            proxy(proxy_config({"m": tapped})) as base,
        ):
            answered = asyncio.Queue[dict[str, Any]]()  # the stand-in's answer to each update
            tap.on_answered = lambda _, ev: (
                answered.put_nowait(ev) if ev["type"] in ANSWERS else None
            )
            port = int(base.rsplit(":", 1)[1])
            url = f"ws://127.0.0.1:{port}/v1"
            async with AsyncOpenAI(api_key="test", websocket_base_url=url) as client:
                async with client.realtime.connect(model="m") as conn:
                    await first_session_created(conn)
                    await conn.session.update(session=voiced("ash", "be kind"))  # type: ignore[arg-type]
                    assert [e["type"] for e in await told(conn)] == ["session.updated"]
                    await append_audio(conn, load_clip("utt05_clean.wav") + silence(1000))
                    events = await events_until_response_done(conn)
                    assert any(e["type"] == "response.output_audio.delta" for e in events)

                    # The Agents SDK's way: every update restates the voice.
                    drain(answered)
                    await conn.session.update(session=voiced("ash", "be kind"))  # type: ignore[arg-type]
                    assert [e["type"] for e in await told(conn)] == ["session.updated"]
                    upstream = await answer_to(answered, "be kind")
                    assert upstream["type"] == "session.updated", upstream

                    drain(answered)
                    await conn.session.update(session=voiced("verse", "be kind"))  # type: ignore[arg-type]
                    error, updated = await told(conn)
                    assert error["type"] == "error", error
                    assert error["error"]["code"] == "voice_update_after_audio_unsupported"
                    assert error["error"]["param"] == "session.audio.output.voice"
                    upstream = await answer_to(answered, "be kind")
                    assert upstream["type"] == "session.updated", upstream
                    assert upstream["session"]["voice"] == "ash"

                    # New instructions once the stand-in has heard the user: refused
                    # to the client alone, the rest (a restated voice) applied upstream.
                    drain(answered)
                    update = {**voiced("ash", "be brief"), "max_output_tokens": 300}
                    await conn.session.update(session=update, event_id="evt_i")  # type: ignore[arg-type]
                    error, updated = await told(conn)
                    assert error["type"] == "error", error
                    assert error["error"]["code"] == "instructions_update_unsupported"
                    assert error["error"]["param"] == "session.instructions"
                    assert error["error"]["event_id"] == "evt_i"
                    assert updated["session"]["instructions"] == "be kind"
                    upstream = await answer_to(answered, "be kind")
                    assert upstream["type"] == "session.updated", upstream
                    assert upstream["session"]["max_tokens"] == 300


async def test_an_agents_sdk_handoff_after_an_answer_is_refused_its_instructions_alone() -> None:
    """``update_agent`` (as a handoff does) restates the SDK's voice with the new
    agent's instructions once the user has spoken: the SDK is told the instructions
    cannot change (GA's path to them), and the upstream takes the rest."""
    strict = ReferenceOptions(fidelity="strict")
    async with reference("duplex", reply_ms=800, options=strict) as backend:
        async with (
            upstream_tap(backend) as (tap, tapped),
            proxy(proxy_config({"m": tapped})) as base,
        ):
            answered = asyncio.Queue[dict[str, Any]]()
            tap.on_answered = lambda _, ev: (
                answered.put_nowait(ev) if ev["type"] in ANSWERS else None
            )
            runner = RealtimeRunner(RealtimeAgent(name="first", instructions="Answer briefly."))
            settings: Any = {"voice": "ash", "turn_detection": {"type": "server_vad"}}
            config: Any = {"url": ws_url(base), "initial_model_settings": settings}
            config["headers"] = {"Authorization": "Bearer unused"}
            session = await runner.run(model_config=config)
            errors: list[Any] = []
            spoke = asyncio.Event()

            async def events() -> None:
                async for event in session:
                    if event.type == "error":
                        errors.append(event.error)
                    elif event.type == "audio_end":
                        spoke.set()

            async with session:
                task = asyncio.create_task(events())
                try:
                    await session.send_audio(load_clip("utt05_clean.wav") + silence(1000))
                    async with asyncio.timeout(20):
                        await spoke.wait()
                    second = RealtimeAgent(name="second", instructions="Answer in French.")
                    drain(answered)
                    await session.update_agent(second)
                    upstream = await answer_to(answered, "Answer briefly.")
                    assert upstream["type"] == "session.updated", upstream
                    assert upstream["session"]["voice"] == "ash"
                    await asyncio.sleep(0.5)  # the client's error comes before its session.updated
                finally:
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await task
            [error] = errors
            assert "instructions_update_unsupported" in str(error), error
            assert "session.instructions" in str(error), error
