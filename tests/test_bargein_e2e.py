"""Barge-in end to end: real Silero VAD on real clips, real backends, real time.

The client streams its microphone at real-time pace, as a browser would: a
question, then silence; once the assistant answers, a clip is played into the
microphone over the answer.
"""

from __future__ import annotations

import asyncio
import base64

import pytest

from tests.realtime_mic import mic, speak_over_the_answer
from tests.servers import (
    Client,
    connect,
    load_clip,
    proxy,
    proxy_config,
    reference,
    ws_url,
)

EMULATED = [("turn", "duplex_emulated"), ("duplex-no-barge-in", "barge_in_emulated")]


async def overlap_session(kind: str, clip: str) -> Client:
    async with (
        reference(kind, reply_ms=6000) as upstream,
        proxy(proxy_config({"m": upstream})) as base,
    ):
        async with connect(ws_url(base)) as c:
            await c.send({"type": "session.update", "session": {"type": "realtime"}})
            await c.until("session.created")
            await speak_over_the_answer(c, clip)
            return c


@pytest.mark.parametrize(("kind", "mode"), EMULATED)
async def test_speech_over_the_answer_cuts_it_and_truncates_what_was_heard(
    kind: str, mode: str
) -> None:
    c = await overlap_session(kind, "utt03_clean.wav")
    done = c.of("response.done")[-1]
    assert done["response"]["status"] == "cancelled"
    assert done["response"]["status_details"]["reason"] == "turn_detected"
    started = c.of("input_audio_buffer.speech_started")
    assert started, "the client is told the user started speaking"
    rid = done["response"]["id"]
    deltas = [
        e
        for e in c.events
        if e.get("type") == "response.output_audio.delta" and e["response_id"] == rid
    ]
    received_ms = sum(len(base64.b64decode(d["delta"])) for d in deltas) / 48
    (truncated,) = [
        e for e in c.of("conversation.item.truncated") if e["item_id"] == deltas[0]["item_id"]
    ]
    assert isinstance(truncated["audio_end_ms"], int)
    assert 0 < truncated["audio_end_ms"] <= received_ms + 1
    last_delta = max(i for i, e in enumerate(c.events) if e in deltas)
    assert last_delta < c.events.index(done), "no audio of the cut response after its end"
    transcript = done["response"]["output"][0]["content"][0]["transcript"]
    full = "".join(
        e["delta"]
        for e in c.events
        if e.get("type") == "response.output_audio_transcript.delta" and e["response_id"] == rid
    )
    assert full.startswith(transcript), "the kept transcript is a prefix of what was said"


@pytest.mark.parametrize(("kind", "mode"), EMULATED)
async def test_noise_over_the_answer_does_not_cut_it(kind: str, mode: str) -> None:
    c = await overlap_session(kind, "noise_pink_05.wav")
    done = c.of("response.done")[-1]
    assert done["response"]["status"] == "completed"
    assert not c.of("conversation.item.truncated")


@pytest.mark.parametrize(("kind", "mode"), EMULATED)
async def test_a_backchannel_pauses_the_answer_then_it_goes_on_with_nothing_lost(
    kind: str, mode: str
) -> None:
    c = await overlap_session(kind, "backchannel00.wav")  # "uh-huh"
    done = c.of("response.done")[-1]
    assert done["response"]["status"] == "completed"
    # A GA client stops playback on speech_started: a backchannel must not get one,
    # nor (its start untold) a speech_stopped.
    first = next(i for i, e in enumerate(c.events) if e["type"] == "response.output_audio.delta")
    during = [e["type"] for e in c.events[first:]]
    assert "input_audio_buffer.speech_started" not in during
    assert "input_audio_buffer.speech_stopped" not in during
    rid = done["response"]["id"]
    audio_ms = (
        sum(
            len(base64.b64decode(e["delta"]))
            for e in c.events
            if e.get("type") == "response.output_audio.delta" and e["response_id"] == rid
        )
        / 48
    )
    assert audio_ms >= 5900, "every held chunk was released: the whole 6 s answer arrived"


async def next_done(c: Client, after: set[str], timeout: float = 20) -> dict[str, object]:
    """The next response.done of a response not in ``after``."""
    async with asyncio.timeout(timeout):
        while True:
            ev = await c.recv(timeout=timeout)
            if ev["type"] == "response.done" and ev["response"]["id"] not in after:
                return ev


@pytest.mark.parametrize(("kind", "mode"), EMULATED)
async def test_after_a_barge_in_the_talk_goes_on_turn_after_turn(kind: str, mode: str) -> None:
    """The cut tells the upstream what was heard; it must not then wait for word of
    every later answer's playback that the client never sends."""
    async with (
        reference(kind, reply_ms=2500) as upstream,
        proxy(proxy_config({"m": upstream})) as base,
        connect(ws_url(base)) as c,
    ):
        await c.send({"type": "session.update", "session": {"type": "realtime"}})
        created = await c.until("session.created")
        assert created["session"]["capabilities"]["proxy"]["mode"] == mode
        state: dict[str, object] = {}
        task = asyncio.create_task(mic(c, load_clip("utt00_clean.wav"), state))
        try:
            first = await c.until("response.output_audio.delta", timeout=20)
            await asyncio.sleep(0.6)
            state["overlay"] = load_clip("utt03_clean.wav")
            cut = await next_done(c, set())
            assert cut["response"]["id"] == first["response_id"]
            assert cut["response"]["status"] == "cancelled"
            seen = {first["response_id"]}
            answer = await next_done(c, seen)  # to what was said over the first answer
            assert answer["response"]["status"] == "completed"
            seen.add(answer["response"]["id"])
            await asyncio.sleep(3.0)  # the answer plays out
            state["overlay"] = load_clip("utt05_clean.wav")
            again = await next_done(c, seen, timeout=30)
            assert again["response"]["status"] == "completed"
        finally:
            state["stop"] = True
            await task
