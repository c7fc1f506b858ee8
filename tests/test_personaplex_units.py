"""PersonaPlex takes its input in 80 ms units: the stand-in's buffer, and the proxy's framing.

* the strict stand-in's buffer (``proxy/reference/personaplex_frames.py``) against
  ``PersonaPlexPcmAppendBuffer`` itself, loaded from the vLLM-Omni 0.30.0 wheel
  (``model_executor/models/personaplex/duplex/input.py``; it imports only numpy);
* on the wire: appends longer than a unit leave audio waiting in the model's buffer;
  without ``extra_body.auto_response`` the model gets one unit per commit;
* the shim cuts the converted audio into whole units and sends the rest ahead of a
  commit (``shim/upstream_input.py``);
* end to end: the ``openai`` SDK through the proxy to the strict PersonaPlex stand-in,
  with the route's ``session_defaults`` from the shipped ``config.toml`` example, a
  spoken corpus turn at 24 kHz in 100 ms appends: the model gets all of it as
  ``pcm_f32le`` at 24 kHz, in whole units.
"""

from __future__ import annotations

import asyncio
import base64
import importlib.util
import json
import random
import tomllib
import types
import zipfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import numpy as np
import pytest
from aiohttp import WSMsgType
from openai import AsyncOpenAI

from proxy.config import config_from_dict
from proxy.reference.options import ReferenceOptions
from proxy.reference.personaplex_frames import (
    UNIT_SAMPLES,
    PersonaPlexFrames,
    PersonaPlexInputError,
)
from proxy.reference.server import DUPLEX_BACKEND, build_reference_app
from shim.audio import PCM_F32, AudioFormat
from shim.upstream_input import AppendConverter, unit_samples
from tests.openai_sdk_client import pcm_session
from tests.servers import ROOT, load_clip, proxy, serve_app, silence
from tests.vllm_omni_client import VERSION, WHEEL, fetch_client_sources

pytestmark = pytest.mark.timeout(120)

INPUT_PY = "vllm_omni/model_executor/models/personaplex/duplex/input.py"
F32_24K = AudioFormat(PCM_F32, 24000)
PCM16_24K = AudioFormat("pcm16", 24000)
PERSONAPLEX = ReferenceOptions(fidelity="strict", profile="personaplex")


# ---- the stand-in's buffer against the wheel's ----


@pytest.fixture(scope="module")
def wheel_buffer(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> types.ModuleType:
    """``personaplex/duplex/input.py`` from the 0.30.0 wheel, as a module of its own."""
    store = getattr(request.config, "cache", None)
    name = f"vllm-omni-{VERSION}"
    cache = store.mkdir(name) if store is not None else tmp_path_factory.mktemp(name)
    fetch_client_sources(cache)  # downloads and checks the wheel
    target = cache / "personaplex_input.py"
    with zipfile.ZipFile(cache / WHEEL) as archive:
        target.write_bytes(archive.read(INPUT_PY))
    spec = importlib.util.spec_from_file_location("wheel_personaplex_input", target)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _payload(samples: np.ndarray, rate: int = 24000, fmt: str = "pcm_f32le") -> dict[str, object]:
    audio = base64.b64encode(samples.astype("<f4").tobytes()).decode()
    return {"type": "audio", "format": fmt, "sample_rate_hz": rate, "audio": audio}


def _samples(payload: dict[str, object] | None) -> np.ndarray | None:
    if payload is None:
        return None
    return np.frombuffer(base64.b64decode(str(payload["audio"])), dtype="<f4")


def test_stand_in_buffer_does_what_the_wheels_does(wheel_buffer: types.ModuleType) -> None:
    rng = random.Random(11)
    real = wheel_buffer.PersonaPlexPcmAppendBuffer()
    ours = PersonaPlexFrames()
    for step in range(600):
        op = rng.random()
        if op < 0.8:
            n = rng.choice([0, 1, 480, 960, 1919, 1920, 1921, 2400, 4000, 5760])
            samples = np.asarray([rng.uniform(-1, 1) for _ in range(n)], dtype=np.float32)
            emit = rng.random() < 0.7
            reservation = real.prepare_append(
                _payload(samples), operation_id=f"op{step}", chunk_period_ms=80, allow_emit=emit
            )
            expected = None if reservation is None else _samples(reservation.payload)
            if reservation is not None:
                reservation.commit()
            raw = samples.astype("<f4").tobytes()
            got = ours.append("pcm_f32le", 24000, raw, allow_emit=emit)
        elif op < 0.95:
            reservation = real.prepare_commit(operation_id=f"op{step}", chunk_period_ms=80)
            expected = _samples(reservation.payload)
            reservation.commit()
            got = ours.commit()
        else:
            real.clear()
            ours.clear()
            expected = got = None
        assert (got is None) == (expected is None), step
        if got is not None:
            assert expected is not None
            assert got.size == UNIT_SAMPLES == expected.size
            np.testing.assert_array_equal(got, expected)
        assert ours.pending_samples * 4 == real.pending_byte_count, step


@pytest.mark.parametrize(
    ("fmt", "rate", "raw"),
    [
        ("pcm16", 24000, b"\0\0\0\0"),
        ("pcm_f32le", 16000, b"\0\0\0\0"),
        ("pcm_f32le", 24000, b"\0\0\0"),
        ("pcm_f32le", 24000, np.asarray([np.nan], dtype="<f4").tobytes()),
    ],
    ids=["format", "rate", "bytes", "nan"],
)
def test_stand_in_refuses_what_the_wheel_refuses_with_its_words(
    wheel_buffer: types.ModuleType, fmt: str, rate: int, raw: bytes
) -> None:
    payload = {
        "format": fmt,
        "sample_rate_hz": rate,
        "audio": base64.b64encode(raw).decode(),
    }
    with pytest.raises(ValueError) as real:
        wheel_buffer.PersonaPlexPcmAppendBuffer().prepare_append(
            payload, operation_id="x", chunk_period_ms=80, allow_emit=True
        )
    with pytest.raises(PersonaPlexInputError) as ours:
        PersonaPlexFrames().append(fmt, rate, raw, allow_emit=True)
    assert str(ours.value) == str(real.value)


# ---- the strict stand-in on the wire ----


@asynccontextmanager
async def standin(
    options: ReferenceOptions = PERSONAPLEX, reply_ms: int = 800
) -> AsyncIterator[tuple[str, list[PersonaPlexFrames]]]:
    """The PersonaPlex stand-in; yields its URL and every session's model input."""
    app = build_reference_app("duplex-no-barge-in", reply_ms=reply_ms, options=options)
    async with serve_app(app) as base:
        url = base.replace("http://", "ws://") + "/v1/realtime?duplex=1&autostart=0"
        yield url, app[DUPLEX_BACKEND].model_inputs


async def _settle(ws: aiohttp.ClientWebSocketResponse) -> list[dict[str, Any]]:
    """Every event up to the heartbeat's answer (the stand-in handles events in order)."""
    await ws.send_str(json.dumps({"type": "session.heartbeat"}))
    seen: list[dict[str, Any]] = []
    while True:
        msg = await ws.receive(timeout=10)
        assert msg.type == WSMsgType.TEXT, msg
        event = json.loads(msg.data)
        if event["type"] == "session.heartbeat_ack":
            return seen
        seen.append(event)


def _tone(n: int, rate: int = 24000) -> np.ndarray:
    t = np.arange(n) / rate
    return (0.3 * np.sin(2 * np.pi * 220 * t)).astype(np.float32)


async def _send_float(ws: aiohttp.ClientWebSocketResponse, audio: np.ndarray, per: int) -> None:
    for i in range(0, audio.size, per):
        payload = _payload(audio[i : i + per])
        await ws.send_str(json.dumps({**payload, "type": "input_audio_buffer.append"}))


@pytest.mark.parametrize(
    ("per", "kept"),
    [(2400, 20 * UNIT_SAMPLES), (UNIT_SAMPLES, 24 * UNIT_SAMPLES)],
    ids=["100ms", "80ms"],
)
async def test_one_unit_per_append_reaches_the_model(per: int, kept: int) -> None:
    total = 24 * UNIT_SAMPLES  # 1.92 s
    async with standin() as (url, inputs), aiohttp.ClientSession() as http:
        async with http.ws_connect(url) as ws:
            session = {"model": "m", "extra_body": {"auto_response": True}}
            await ws.send_str(json.dumps({"type": "session.update", "session": session}))
            await _send_float(ws, _tone(total), per)
            seen = await _settle(ws)
            assert not [e for e in seen if e["type"] == "error"], seen
            (frames,) = inputs
            assert frames.appended_samples == total
            # 100 ms appends: twenty units for twenty appends, 320 ms still waiting.
            assert frames.delivered_samples == kept
            assert frames.pending_samples == total - kept
            assert frames.unit_sizes == {UNIT_SAMPLES}


async def test_without_auto_response_a_commit_hands_over_one_unit() -> None:
    async with standin() as (url, inputs), aiohttp.ClientSession() as http:
        async with http.ws_connect(url) as ws:
            await ws.send_str(json.dumps({"type": "session.update", "session": {"model": "m"}}))
            await _send_float(ws, _tone(24000), UNIT_SAMPLES)
            await _send_float(ws, np.zeros(4800, dtype=np.float32), UNIT_SAMPLES)
            commit = {"type": "input_audio_buffer.commit", "response_create": True}
            await ws.send_str(json.dumps(commit))
            seen = await _settle(ws)
            assert "input_audio_buffer.committed" in [e["type"] for e in seen]
            (frames,) = inputs
            # Quiet appends never reach the buffer; the commit takes one unit of the rest.
            assert frames.appended_samples == 24000
            assert (frames.units, frames.delivered_samples) == (1, UNIT_SAMPLES)
            assert frames.pending_samples == 24000 - UNIT_SAMPLES


async def test_lenient_stand_in_has_no_model_buffer() -> None:
    lenient = ReferenceOptions(fidelity="lenient", profile="personaplex")
    async with standin(lenient) as (url, inputs), aiohttp.ClientSession() as http:
        async with http.ws_connect(url) as ws:
            await ws.send_str(json.dumps({"type": "session.update", "session": {"model": "m"}}))
            await _send_float(ws, _tone(4800), 4800)
            assert not [e for e in await _settle(ws) if e["type"] == "error"]
            assert inputs == []


# ---- the shim's framing ----


def _append(pcm: bytes) -> dict[str, Any]:
    return {"type": "input_audio_buffer.append", "audio": base64.b64encode(pcm).decode()}


def test_converter_sends_whole_units_and_the_rest_ahead_of_a_commit() -> None:
    unit = unit_samples(F32_24K, {"chunk_period_ms": 80})
    assert unit == UNIT_SAMPLES
    conv = AppendConverter(F32_24K, unit)
    pcm = (np.arange(24000 * 3 // 10 * 7, dtype=np.int64) % 2000 - 1000).astype("<i2")
    sent: list[bytes] = []
    for i in range(0, pcm.size, 2400):  # 100 ms appends of 24 kHz PCM16
        event = {**_append(pcm[i : i + 2400].tobytes()), "event_id": f"evt_{i}"}
        for ev in conv.appends(event, PCM16_24K):
            # A unit may hold audio of several appends: no client event id goes with it.
            assert ev["type"] == "input_audio_buffer.append" and "event_id" not in ev
            sent.append(base64.b64decode(ev["audio"]))
    assert {len(b) for b in sent} == {UNIT_SAMPLES * 4}
    assert conv.pending_bytes == (pcm.size % UNIT_SAMPLES) * 4
    rest = conv.flush()
    assert rest is not None and conv.pending_bytes == 0 and conv.flush() is None
    sent.append(base64.b64decode(rest["audio"]))
    got = np.frombuffer(b"".join(sent), dtype="<f4")
    np.testing.assert_allclose(got, pcm.astype(np.float32) / 32768.0, atol=1e-6)


def test_converter_without_a_unit_passes_appends_through() -> None:
    assert unit_samples(F32_24K, {}) is None
    conv = AppendConverter(F32_24K)
    (ev,) = conv.appends(_append(b"\1\0" * 2400), PCM16_24K)
    assert len(base64.b64decode(ev["audio"])) == 2400 * 4
    assert conv.flush() is None


# ---- end to end: a GA client, the proxy, the strict PersonaPlex stand-in ----


def shipped_personaplex_defaults() -> dict[str, Any]:
    """The PersonaPlex route's ``session_defaults`` from the shipped config.toml example."""
    text = (ROOT / "config.toml").read_text()
    examples = text[text.index("# Examples for real deployments") :].splitlines()[1:]
    uncommented = [line.removeprefix("# ") for line in examples if line.startswith("# ")]
    routes = tomllib.loads("\n".join(uncommented))["routes"]
    (route,) = [r for r in routes if r["model"] == "personaplex"]
    defaults: dict[str, Any] = route["session_defaults"]
    return defaults


@asynccontextmanager
async def ga_client(upstream: str, defaults: dict[str, Any]) -> AsyncIterator[Any]:
    """The ``openai`` SDK's realtime connection through a proxy whose one route leads to
    ``upstream`` with the shipped example's ``session_defaults``."""
    route = {"model": "m", "upstream": upstream, "session_defaults": defaults}
    config = config_from_dict({"routes": [route], "auth": {"mode": "none"}})
    async with proxy(config) as base:
        port = int(base.rsplit(":", 1)[1])
        client = AsyncOpenAI(api_key="test", websocket_base_url=f"ws://127.0.0.1:{port}/v1")
        async with client, client.realtime.connect(model="m") as conn:
            yield conn


async def test_ga_client_turn_reaches_personaplex_whole(tmp_path: Path) -> None:
    defaults = shipped_personaplex_defaults()
    speech = silence(600) + load_clip("utt00_clean.wav") + silence(300)
    sent_samples = len(speech) // 2
    async with standin(reply_ms=600) as (upstream, inputs):
        async with ga_client(upstream, defaults) as conn:
            events: list[dict[str, Any]] = [json.loads(await conn.recv_bytes())]
            assert events[0]["type"] == "session.created"
            # Push-to-talk: the client ends its turn itself.
            await conn.session.update(session=pcm_session(turn_detection=None))
            step = 2400 * 2  # 100 ms of 24 kHz PCM16: not a whole number of units
            for i in range(0, len(speech), step):
                chunk = base64.b64encode(speech[i : i + step]).decode()
                await conn.input_audio_buffer.append(audio=chunk)
                await asyncio.sleep(0.02)
            await conn.input_audio_buffer.commit()
            async with asyncio.timeout(30):
                while events[-1]["type"] != "input_audio_buffer.committed":
                    events.append(json.loads(await conn.recv_bytes()))
        assert not [e for e in events if e["type"] == "error"], events
    (frames,) = inputs
    # All of it reached the model's buffer as 24 kHz float (the last part of a unit
    # ahead of the commit), one unit per append at most.
    assert frames.appended_samples == sent_samples
    assert frames.longest_append == UNIT_SAMPLES
    # ... and the model took all of it, in whole units (the commit's padded out).
    assert frames.pending_samples == 0
    assert frames.delivered_samples == frames.appended_samples
    assert frames.unit_sizes == {UNIT_SAMPLES}


async def test_ga_client_with_server_vad_sends_personaplex_whole_units() -> None:
    defaults = shipped_personaplex_defaults()
    spoken = silence(600) + load_clip("utt02_clean.wav")
    async with standin(reply_ms=600) as (upstream, inputs):
        async with ga_client(upstream, defaults) as conn:
            events: list[dict[str, Any]] = [json.loads(await conn.recv_bytes())]
            await conn.session.update(session=pcm_session())
            step = 2400 * 2  # 100 ms appends, at the pace of speech
            speech = spoken + silence(1500)
            for i in range(0, len(speech), step):
                chunk = base64.b64encode(speech[i : i + step]).decode()
                await conn.input_audio_buffer.append(audio=chunk)
                await asyncio.sleep(0.1)
            async with asyncio.timeout(30):
                while events[-1]["type"] != "response.done":
                    events.append(json.loads(await conn.recv_bytes()))
        assert not [e for e in events if e["type"] == "error"], events
    (frames,) = inputs
    # Everything up to the end of the speech came before the answer, so it all went up
    # (all but what the proxy holds of an unfinished unit), one whole unit per append.
    assert frames.appended_samples >= len(spoken) // 2 - UNIT_SAMPLES
    assert frames.longest_append == UNIT_SAMPLES
    assert frames.pending_samples == 0 and frames.delivered_samples == frames.appended_samples
    assert frames.unit_sizes == {UNIT_SAMPLES}
