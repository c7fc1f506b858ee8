"""A vLLM-Omni-native client of the barge-in relay sees what the server itself sends.

``barge_in_emulated`` relays a duplex upstream to a native client (``?duplex=1``) and
adds only the proxy's barge-in. Whatever the proxy sends the upstream on its own
account (its ``playback.ack`` of what was heard) is answered by the upstream, and
those answers are the proxy's: the client sent no such command and must never see
them. Every upstream is a strict stand-in (``docs/fidelity.md``), the speech the dev
corpus.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import numpy as np
import pybase64
import pytest
import soxr

from proxy.reference import ReferenceOptions
from shim.g711 import ULAW, g711_to_int16, int16_to_g711
from tests.servers import (
    Client,
    connect,
    load_clip,
    proxy,
    proxy_config,
    reference,
    silence,
    ws_url,
)

pytestmark = pytest.mark.timeout(120)

NATIVE = {"duplex": "1", "autostart": "0"}


def pcm16k(pcm24: bytes) -> bytes:
    samples = np.frombuffer(pcm24, dtype="<i2")
    out: np.ndarray = soxr.resample(samples, 24000, 16000)
    return out.astype("<i2").tobytes()


def opening(**session: Any) -> dict[str, Any]:
    """The ``session.update`` vLLM-Omni's ``DuplexClient`` opens with."""
    body = {
        "model": "m",
        "modalities": ["audio", "text"],
        "input_audio_format": "pcm16",
        "output_audio_format": "pcm16",
        "sample_rate_hz": 16000,
        "audio": {"input": {"sample_rate_hz": 16000}, "output": {"sample_rate_hz": 24000}},
        "turn_detection": None,
        "extra_body": {"auto_response": True},
    }
    return {"type": "session.update", "session": body | session}


@asynccontextmanager
async def native_session(
    kind: str, mode: str, reply_ms: int = 1000, opened: dict[str, Any] | None = None
) -> AsyncIterator[Client]:
    """A native client's session through the proxy in front of a strict ``kind``
    stand-in, opened as ``DuplexClient`` opens (or with ``opened``) and served in
    ``mode``."""
    options = ReferenceOptions(fidelity="strict")
    async with (
        reference(kind, reply_ms=reply_ms, options=options) as upstream,
        proxy(proxy_config({"m": upstream})) as base,
        connect(ws_url(base, **NATIVE)) as c,
    ):
        await c.send(opened or opening())
        created = await c.until("session.created")
        assert created["session"]["capabilities"]["proxy"]["mode"] == mode
        yield c


async def say(c: Client, pcm: bytes, fmt: str = "pcm16", rate: int = 16000) -> None:
    """Append ``pcm`` as ``DuplexClient`` does (200 ms appends naming format and rate)."""
    step = rate * 2 // 5 if fmt == "pcm16" else rate // 5
    for i in range(0, len(pcm), step):
        chunk = pybase64.b64encode(pcm[i : i + step]).decode()
        await c.send(
            {
                "type": "input_audio_buffer.append",
                "audio": chunk,
                "format": fmt,
                "sample_rate_hz": rate,
            }
        )


async def test_a_refusal_of_the_proxys_own_ack_never_reaches_the_client() -> None:
    """An upstream without truncation gets the client's truncate of an answer as the
    proxy's ``playback.ack`` of what was heard. Of an answer cancelled and followed
    by another turn, vLLM-Omni refuses that ack (``playback_ack_too_late``, with no
    event id: ``engine/duplex/session/playback_ledger.py``); the client, which sent
    no ack, gets the proxy's ``conversation.item.truncated`` and no error."""
    speech = pcm16k(load_clip("utt05_clean.wav") + silence(800))
    async with native_session("duplex-no-barge-in", "barge_in_emulated", 3000) as c:
        await say(c, speech)
        await c.send({"type": "input_audio_buffer.commit", "final": True})
        first = (await c.until("response.created"))["response"]["id"]
        await c.until("response.output_audio.delta")
        await c.send({"type": "response.cancel"})
        done = await c.until("response.done")
        assert done["response"]["status"] == "cancelled"
        await say(c, speech)
        await c.send({"type": "input_audio_buffer.commit", "final": True})
        second = await c.until("response.done", timeout=30)
        assert second["response"]["status"] == "completed"
        truncate = {
            "type": "conversation.item.truncate",
            "item_id": f"item_{first}",
            "content_index": 0,
            "audio_end_ms": 40,
        }
        await c.send(truncate)
        truncated = await c.until("conversation.item.truncated")
        assert truncated["item_id"] == f"item_{first}"
        await c.send({"type": "session.heartbeat"})
        await c.until("session.heartbeat_ack")  # the upstream has answered the ack by now
        assert not c.of("error"), c.of("error")


async def test_g711_as_vllm_omni_takes_it_from_a_native_client() -> None:
    """vLLM-Omni takes ``g711_ulaw`` both ways from a native client: μ-law appends at
    8 kHz, and the answer as μ-law deltas labelled ``format: g711_ulaw``,
    ``sample_rate_hz: 8000`` (its ``protocol/realtime/audio.py``). Through the relay
    the same: the turn is heard (the stand-in says how long it was), the answer's
    deltas come as the upstream sent them, and its length is what was generated."""
    pcm8 = soxr.resample(
        np.frombuffer(load_clip("utt05_clean.wav") + silence(800), "<i2"), 24000, 8000
    )
    ulaw = int16_to_g711(pcm8.astype(np.int16), ULAW)
    rates = {"input": {"sample_rate_hz": 8000}, "output": {"sample_rate_hz": 8000}}
    g711 = opening(
        input_audio_format="g711_ulaw",
        output_audio_format="g711_ulaw",
        sample_rate_hz=8000,
        audio=rates,
    )
    async with native_session("duplex-no-barge-in", "barge_in_emulated", 2000, g711) as c:
        await say(c, ulaw, fmt="g711_ulaw", rate=8000)
        await c.send({"type": "input_audio_buffer.commit", "final": True})
        done = await c.until("response.done", timeout=30)
    assert not c.of("error"), c.of("error")
    assert done["response"]["status"] == "completed"
    transcript = done["response"]["output"][0]["content"][0]["transcript"]
    heard = re.search(r"heard about ([0-9.]+) seconds", transcript)
    assert heard and float(heard.group(1)) == pytest.approx(4.0, abs=0.3), transcript
    deltas = c.of("response.output_audio.delta")
    assert {(d.get("format"), d.get("sample_rate_hz")) for d in deltas} == {("g711_ulaw", 8000)}
    audio = b"".join(pybase64.b64decode(d["delta"]) for d in deltas)
    assert len(audio) == 2000 * 8, "one byte a sample at 8 kHz: the 2 s answer"
    assert np.abs(g711_to_int16(audio, ULAW).astype(np.int32)).max() > 1000, "not silence"


@pytest.mark.parametrize(
    ("output", "rate"), [({}, 8000), ({"format": {"type": "g711_alaw", "rate": 16000}}, 16000)]
)
async def test_the_stand_in_answers_g711_in_g711(output: dict[str, Any], rate: int) -> None:
    """vLLM-Omni converts each delta of a G.711 session's answer itself
    (``protocol/realtime/audio.py``, ``convert_output_audio``: to the declared output
    rate, else 8 kHz, labelled with the G.711 name); so does the strict stand-in."""
    session: dict[str, Any] = {"audio": {"output": output}} if output else {}
    if not output:
        session["output_audio_format"] = "g711_ulaw"
    options = ReferenceOptions(fidelity="strict")
    async with (
        reference("duplex", reply_ms=1000, options=options) as upstream,
        connect(upstream + "?duplex=1&autostart=0&model=m") as c,
    ):
        await c.send(
            opening(**session) if not output else opening(output_audio_format=None, **session)
        )
        await c.until("session.created")
        await say(c, pcm16k(load_clip("utt05_clean.wav")))
        await c.send({"type": "input_audio_buffer.commit", "final": True})
        await c.until("response.done", timeout=30)
    deltas = c.of("response.output_audio.delta")
    name = "g711_alaw" if output else "g711_ulaw"
    assert {(d["format"], d["sample_rate_hz"]) for d in deltas} == {(name, rate)}
    audio = b"".join(pybase64.b64decode(d["delta"]) for d in deltas)
    assert len(audio) == pytest.approx(rate, abs=len(deltas)), "1 s, one byte a sample"


async def test_without_turn_detection_every_turn_is_told_as_the_upstream_tells_it() -> None:
    """Without server VAD vLLM-Omni marks each buffer's first append
    (``speech_started``) and its commit (``speech_stopped``): ``docs/fidelity.md``,
    row 2. The proxy decides no barge-in then, so a turn spoken right after the client
    cancelled an answer (its audio would still be playing by the proxy's clock) is
    told as the upstream tells it."""
    speech = pcm16k(load_clip("utt05_clean.wav") + silence(800))
    async with native_session("duplex-no-barge-in", "barge_in_emulated", 3000) as c:
        for turn in range(2):
            await say(c, speech)
            await c.send({"type": "input_audio_buffer.commit", "final": True})
            await c.until("response.output_audio.delta", timeout=30)
            if turn == 0:
                await c.send({"type": "response.cancel"})
            done = await c.until("response.done", timeout=30)
        assert done["response"]["status"] == "completed"
    kinds = [e["type"] for e in c.events if e["type"].startswith("input_audio_buffer.")]
    assert kinds == 2 * [
        "input_audio_buffer.speech_started",
        "input_audio_buffer.speech_stopped",
        "input_audio_buffer.committed",
    ]


BAD_INPUT = [
    {"type": "input_audio_buffer.append", "audio": "@@@not base64"},
    {"type": "input_audio_buffer.append", "audio": pybase64.b64encode(b"\x00\x01\x02").decode()},
    {"type": "input_audio_buffer.append", "audio": "AAAA", "format": "opus"},
    {"type": "input_audio_buffer.append", "audio": "AAAAAA==", "sample_rate_hz": 12},
    {"type": "playback.ack", "played_ms": "soon"},
    {"type": "session.update", "session": {"input_audio_format": "opus"}},
    # GA's G.711 names are not vLLM-Omni's.
    {"type": "session.update", "session": {"output_audio_format": "audio/pcmu"}},
    {"type": "session.update", "session": {"audio": {"input": {"format": {"type": "audio/pcma"}}}}},
]


async def refusals(url: str) -> list[tuple[str, str, str | None]]:
    """The (code, message, event id) of each refusal of ``BAD_INPUT``, in order."""
    async with connect(url) as c:
        await c.send(opening())
        await c.until("session.created")
        for n, bad in enumerate(BAD_INPUT):
            await c.send({**bad, "event_id": f"bad_{n}"})
        await c.send({"type": "session.heartbeat"})
        await c.until("session.heartbeat_ack")
    return [
        (e["error"]["code"], e["error"]["message"], e["error"].get("event_id"))
        for e in c.of("error")
    ]


@pytest.mark.parametrize("kind", ["duplex-no-barge-in", "turn"])
async def test_bad_input_is_refused_in_vllm_omnis_words(kind: str) -> None:
    """What the relay cannot read (an append's audio, format or rate, an ack's
    position, a session's audio format) goes to the upstream, which refuses it in
    vLLM-Omni's words; over a turn-based upstream the proxy refuses it in those words
    itself (``shim/native_client.py``): the client gets what it would get from the
    server."""
    options = ReferenceOptions(fidelity="strict")
    async with reference("duplex-no-barge-in", options=options) as upstream:
        direct = await refusals(upstream + "?duplex=1&autostart=0&model=m")
    async with (
        reference(kind, options=options) as upstream,
        proxy(proxy_config({"m": upstream})) as base,
    ):
        relayed = await refusals(ws_url(base, **NATIVE))
    assert len(direct) == len(BAD_INPUT), direct
    assert relayed == direct


async def frame_refusals(url: str) -> list[dict[str, Any]]:
    async with connect(url) as c:
        await c.send(opening())
        await c.until("session.created")
        for frame in ("not json", "[1, 2]", '{"no": "type"}'):
            await c.ws.send_str(frame)
        await c.send({"type": "session.heartbeat"})
        await c.until("session.heartbeat_ack")
    return [e["error"] for e in c.of("error")]


@pytest.mark.parametrize("kind", ["duplex", "duplex-no-barge-in", "turn"])
async def test_a_frame_that_is_no_event_is_refused_as_vllm_omni_refuses_it(kind: str) -> None:
    """vLLM-Omni refuses a frame that is not JSON (``invalid_json``) or not an object
    with a ``type`` (``bad_event``) in its own words, naming no event
    (``entrypoints/duplex/serving.py``); the proxy reads every frame before any mode
    sees it, and refuses a native client's the same way."""
    options = ReferenceOptions(fidelity="strict")
    async with reference("duplex", options=options) as upstream:
        direct = await frame_refusals(upstream + "?duplex=1&autostart=0&model=m")
    async with (
        reference(kind, options=options) as upstream,
        proxy(proxy_config({"m": upstream})) as base,
    ):
        through = await frame_refusals(ws_url(base, **NATIVE))
    assert [e["code"] for e in direct] == ["invalid_json", "bad_event", "bad_event"]
    assert through == direct


async def test_the_proxys_own_turn_fields_never_reach_the_upstream() -> None:
    """vLLM-Omni refuses a ``server_vad`` object with fields it does not know
    (``engine/duplex/turn_detection.py``). A native client of the barge-in relay may
    set the proxy's own (``barge_in_decision_ms``, ``overlap_events``:
    docs/protocol.md, "Overlap protocol"): they stay with the proxy, and the upstream
    gets its server VAD, at open and on an update, instead of a refusal (at open, the
    session was opened without turn detection at all)."""
    options = ReferenceOptions(fidelity="strict")
    vad = {"type": "server_vad", "barge_in_decision_ms": 400, "overlap_events": True}
    async with (
        reference("duplex-no-barge-in", options=options) as upstream,
        proxy(proxy_config({"m": upstream})) as base,
        connect(ws_url(base, **NATIVE)) as c,
    ):
        await c.send(opening(turn_detection=vad))
        created = await c.until("session.created")
        assert created["session"]["capabilities"]["proxy"]["mode"] == "barge_in_emulated"
        assert created["session"]["turn_detection"]["type"] == "server_vad"
        later = {"type": "server_vad", "barge_in_decision_ms": 300}
        await c.send({"type": "session.update", "session": {"turn_detection": later}})
        await c.until("session.updated")  # the opening's
        updated = await c.until("session.updated")
        assert updated["session"]["turn_detection"]["type"] == "server_vad"
        await c.send({"type": "session.heartbeat"})
        await c.until("session.heartbeat_ack")
    assert not c.of("error"), c.of("error")
