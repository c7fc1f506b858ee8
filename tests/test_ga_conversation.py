"""A GA client's spoken conversation through the proxy over strict stand-ins.

The official ``openai`` SDK talks at real-time pace: ten user turns, three of them
barge-ins over the answer, and it behaves as GA applications do: it plays what it
gets on a real-time clock, sends no ``playback.ack``, and on every
``input_audio_buffer.speech_started`` during the answer it stops playback and sends
``conversation.item.truncate`` at what it played. Every server event must parse as
an OpenAI GA ``RealtimeServerEvent``; the stand-ins behave like vLLM-Omni 0.30.0
(``docs/fidelity.md``): ack-owned playback, turns only under server VAD, opt-in
barge-in, required open fields per model (given by the route's ``session_defaults``).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
from dataclasses import dataclass, field
from typing import Any

import pytest
from openai import AsyncOpenAI
from openai.types.realtime import RealtimeServerEvent
from pydantic import TypeAdapter

from proxy.config import config_from_dict
from proxy.reference.options import ReferenceOptions
from tests.servers import load_clip, proxy, reference, silence

RATE = 24000
CHUNK_MS = 40
CHUNK = RATE * CHUNK_MS // 1000
GA_EVENTS: TypeAdapter[Any] = TypeAdapter(RealtimeServerEvent)
# Non-GA events a GA client may get: those docs/protocol.md lists (none by default).
EXTENSIONS: frozenset[str] = frozenset()
BARGE_IN_AFTER_S = 1.0  # into the answer's playback
QUIET_BEFORE_TURN_S = 0.6
# The route fields each model needs at open (docs/fidelity.md, row 7).
SESSION_DEFAULTS = {
    "minicpmo": {"ref_audio": "data:audio/wav;base64,UklGRiQAAABXQVZF"},
    "nemotron": {"extra_body": {"auto_response": True}},
    # PersonaPlex reads 24 kHz float only (the proxy converts the client's PCM16 to it), and
    # hands its model the audio of each append only with auto_response (row 11a).
    "personaplex": {
        "input_audio_format": "pcm_f32le",
        "sample_rate_hz": 24000,
        "extra_body": {"auto_response": True},
    },
}
TEN_TURNS = [
    ("utt00_clean.wav", False),
    ("utt02_clean.wav", False),
    ("utt01_clean.wav", True),
    ("utt04_clean.wav", False),
    ("utt05_clean.wav", False),
    ("utt06_clean.wav", True),
    ("utt07_clean.wav", False),
    ("utt09_clean.wav", False),
    ("utt08_clean.wav", True),
    ("utt10_clean.wav", False),
]
FOUR_TURNS = [TEN_TURNS[0], TEN_TURNS[2], TEN_TURNS[3], TEN_TURNS[9]]


@dataclass
class Speaker:
    """Plays each response's audio from its first delta on, in real time."""

    loop: asyncio.AbstractEventLoop
    item_id: str | None = None
    started: float = 0.0
    received_ms: float = 0.0
    stopped_at_ms: float | None = None

    def add(self, item_id: str, pcm_bytes: int) -> None:
        if item_id != self.item_id:
            self.item_id, self.started = item_id, self.loop.time()
            self.received_ms, self.stopped_at_ms = 0.0, None
        if self.stopped_at_ms is None:
            self.received_ms += pcm_bytes / 2 * 1000 / RATE

    def played_ms(self) -> float:
        if self.stopped_at_ms is not None:
            return self.stopped_at_ms
        return min((self.loop.time() - self.started) * 1000, self.received_ms)

    def playing(self) -> bool:
        return self.stopped_at_ms is None and self.played_ms() < self.received_ms

    def stop(self) -> int:
        self.stopped_at_ms = self.played_ms()
        return int(self.stopped_at_ms)


@dataclass
class Seen:
    events: list[dict[str, Any]] = field(default_factory=list)
    invalid: list[tuple[str, str]] = field(default_factory=list)
    truncates: list[dict[str, Any]] = field(default_factory=list)
    speech_over_audio: int = 0
    answering: bool = False  # a response is under way (created, not yet done)
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("type") == kind]


def route_config(upstream: str, profile: str) -> Any:
    route: dict[str, Any] = {"model": "m", "upstream": upstream}
    if profile in SESSION_DEFAULTS:
        route["session_defaults"] = SESSION_DEFAULTS[profile]
    return config_from_dict({"routes": [route], "auth": {"mode": "none"}})


async def converse(kind: str, profile: str, turns: list[tuple[str, bool]]) -> Seen:
    loop = asyncio.get_running_loop()
    seen, speaker = Seen(), Speaker(loop)
    options = ReferenceOptions(fidelity="strict", profile=profile)
    async with (
        reference(kind, reply_ms=3000, options=options) as upstream,
        proxy(route_config(upstream, profile)) as base,
    ):
        port = int(base.rsplit(":", 1)[1])
        client = AsyncOpenAI(api_key="test", websocket_base_url=f"ws://127.0.0.1:{port}/v1")
        async with client, client.realtime.connect(model="m") as conn:
            first = json.loads(await conn.recv_bytes())
            assert first["type"] == "session.created", first
            seen.events.append(first)
            await conn.session.update(
                session={
                    "type": "realtime",
                    "audio": {"input": {"format": {"type": "audio/pcm", "rate": RATE}}},
                }
            )

            async def events() -> None:
                while True:
                    ev = json.loads(await conn.recv_bytes())
                    seen.events.append(ev)
                    kind_ = ev.get("type")
                    if kind_ not in EXTENSIONS:
                        try:
                            GA_EVENTS.validate_python(ev)
                        except Exception as exc:  # collected, asserted below
                            seen.invalid.append((str(kind_), str(exc)[:400]))
                    if kind_ == "response.created":
                        seen.answering = True
                    elif kind_ == "response.done":
                        seen.answering = False
                    elif kind_ == "response.output_audio.delta":
                        speaker.add(ev["item_id"], len(base64.b64decode(ev["delta"])))
                    elif kind_ == "input_audio_buffer.speech_started" and (
                        speaker.playing() or (seen.answering and speaker.item_id is not None)
                    ):
                        # A GA client: stop playback, truncate at what was played.
                        seen.speech_over_audio += 1
                        item_id = speaker.item_id
                        assert item_id is not None
                        truncate = {"item_id": item_id, "audio_end_ms": speaker.stop()}
                        seen.truncates.append(truncate)
                        await conn.conversation.item.truncate(content_index=0, **truncate)
                    seen.changed.set()

            async def wait_for(ready: Any, within_s: float = 30.0) -> None:
                async with asyncio.timeout(within_s):
                    while not ready():
                        seen.changed.clear()
                        with contextlib.suppress(TimeoutError):
                            await asyncio.wait_for(seen.changed.wait(), 0.05)

            async def say(pcm: bytes) -> None:
                t0 = loop.time()
                for n, i in enumerate(range(0, len(pcm), CHUNK * 2), start=1):
                    chunk = base64.b64encode(pcm[i : i + CHUNK * 2]).decode()
                    await conn.input_audio_buffer.append(audio=chunk)
                    await asyncio.sleep(max(0.0, t0 + n * CHUNK_MS / 1000 - loop.time()))

            reader = asyncio.create_task(events())
            try:
                for n, (clip, barge_in) in enumerate(turns):
                    if barge_in:
                        # Into the answer to the previous turn, once it has played a while.
                        await wait_for(
                            lambda: (
                                speaker.playing() and speaker.played_ms() >= BARGE_IN_AFTER_S * 1000
                            )
                        )
                    else:
                        # Once the previous answer is done and played out.
                        await wait_for(
                            lambda n=n: len(seen.of("response.done")) >= n and not speaker.playing()
                        )
                        await say(silence(int(QUIET_BEFORE_TURN_S * 1000)))
                    await say(load_clip(clip) + silence(800))
                final = len(turns)
                await wait_for(lambda: len(seen.of("response.done")) >= final)
                await wait_for(lambda: not speaker.playing())
                await say(silence(600))  # nothing more comes of the quiet
            finally:
                reader.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await reader
    return seen


def check(seen: Seen, turns: list[tuple[str, bool]], mode: str) -> None:
    created = seen.events[0]
    assert created["session"]["capabilities"]["proxy"]["mode"] == mode
    assert not seen.invalid, seen.invalid[:5]
    errors = seen.of("error")
    assert not errors, errors
    barge_ins = sum(1 for _, b in turns if b)
    done = [e["response"] for e in seen.of("response.done")]
    assert len(seen.of("response.created")) == len(turns), [e["type"] for e in seen.events]
    cut = [r for r in done if r["status"] == "cancelled"]
    assert len(cut) == barge_ins, [(r["status"], r.get("status_details")) for r in done]
    assert all(r["status_details"]["reason"] == "turn_detected" for r in cut)
    assert [r["status"] for r in done].count("completed") == len(turns) - barge_ins
    assert seen.speech_over_audio == barge_ins, "a speech_started over audio is a barge-in"
    truncated = [(e["item_id"], e["audio_end_ms"]) for e in seen.of("conversation.item.truncated")]
    assert len(seen.truncates) == barge_ins
    for sent in seen.truncates:
        assert (sent["item_id"], sent["audio_end_ms"]) in truncated, (sent, truncated)
    # Only the cut items are truncated: by the proxy's cut, then the client's truncate.
    assert {i for i, _ in truncated} == {t["item_id"] for t in seen.truncates}
    assert len(truncated) <= 2 * barge_ins


KINDS = [
    ("duplex", "generic", "barge_in_emulated"),
    ("duplex-no-barge-in", "generic", "barge_in_emulated"),
    ("turn", "generic", "duplex_emulated"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "profile", "mode"), KINDS, ids=[k for k, _, _ in KINDS])
async def test_ten_turns_with_three_barge_ins(kind: str, profile: str, mode: str) -> None:
    seen = await converse(kind, profile, TEN_TURNS)
    check(seen, TEN_TURNS, mode)


PROFILES = [
    ("duplex", "minicpmo", "barge_in_emulated"),
    ("duplex-no-barge-in", "nemotron", "barge_in_emulated"),
    ("duplex", "qwen3omni", "barge_in_emulated"),  # needs nothing, refuses auto_response
    ("duplex-no-barge-in", "personaplex", "barge_in_emulated"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "profile", "mode"), PROFILES, ids=[p for _, p, _ in PROFILES])
async def test_models_with_open_requirements_converse(kind: str, profile: str, mode: str) -> None:
    seen = await converse(kind, profile, FOUR_TURNS)
    check(seen, FOUR_TURNS, mode)
