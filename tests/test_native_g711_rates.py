"""A native client's G.711 at the rates vLLM-Omni reads it, and its session's rate
found where vLLM-Omni looks first.

vLLM-Omni 0.30.0 keeps a session's input rate apart from its format (16 kHz unless
declared) and reads G.711 at that rate like PCM16 (``protocol/realtime/session.py``,
``apply_realtime_session_defaults``; ``protocol/realtime/audio_input.py``,
``decode_audio_append``). It reads the rate from the flat ``sample_rate_hz`` /
``sample_rate`` first, then ``audio.input``'s, then the format's own ``rate``, and
tells the format back as ``{"type": "audio/g711_ulaw", "rate": 16000}``. The
proxy reads a native client's session the same way, in every emulated mode, through
a resume too; a GA client's G.711 stays GA's 8 kHz. The rules are checked against
the wheel's own reader, the stand-in and the proxy against each other on real speech.
"""

from __future__ import annotations

import re
import sys
import types
import zipfile
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import numpy as np
import pybase64
import pytest
import soxr

from proxy.reference import ReferenceOptions
from shim.audio import PCM16, PCMA, PCMU, AudioFormat
from shim.dialects.duplex_relay import BargeInRelaySession
from shim.dialects.ga_relay import GaRelaySession
from shim.dialects.turn_based import TurnBasedSession
from shim.g711 import ULAW, int16_to_g711
from shim.session import EmulatedSession, ShimSettings
from shim.vad_gate import VadParams
from tests.servers import Client, connect, load_clip, reference, silence
from tests.shim_script import Script, client_events, upstream_events
from tests.test_native_relay import native_session, opening
from tests.vllm_omni_client import VERSION, WHEEL, fetch_client_sources

pytestmark = pytest.mark.timeout(120)

SETTINGS = ShimSettings(vad=VadParams(), echo_suppression=False)
SID = "sess_0123456789abcdef"
ULAW_TOLD = {"type": "audio/g711_ulaw", "rate": 16000}


def native_sessions() -> list[EmulatedSession]:
    return [
        BargeInRelaySession(SID, "m", SETTINGS, {}),
        TurnBasedSession(SID, "m", "m-up", SETTINGS, native_client=True),
    ]


def update(**session: Any) -> dict[str, Any]:
    return {"type": "session.update", "session": session}


# ---- the wheel's own reader ----


@pytest.fixture(scope="module")
def wheel_session(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[types.ModuleType]:
    """``protocol/realtime/session.py`` (and the ``formats.py`` it imports) from the
    0.30.0 wheel, as modules of their own names."""
    store = getattr(request.config, "cache", None)
    name = f"vllm-omni-{VERSION}"
    cache = store.mkdir(name) if store is not None else tmp_path_factory.mktemp(name)
    fetch_client_sources(cache)  # downloads and checks the wheel
    prefix = "vllm_omni/protocol/realtime/"
    with zipfile.ZipFile(cache / WHEEL) as archive:
        formats_src = archive.read(prefix + "formats.py").decode()
        session_src = archive.read(prefix + "session.py").decode()
    names = ("wheel_realtime_formats", "wheel_realtime_session")
    formats = types.ModuleType(names[0])
    sys.modules[names[0]] = formats
    exec(compile(formats_src, prefix + "formats.py", "exec"), formats.__dict__)
    session = types.ModuleType(names[1])
    sys.modules[names[1]] = session
    session_src = session_src.replace("vllm_omni.protocol.realtime.formats", names[0])
    exec(compile(session_src, prefix + "session.py", "exec"), session.__dict__)
    try:
        yield session
    finally:
        for module in names:
            sys.modules.pop(module, None)


# Session objects a native client may open with, each once with G.711 and once PCM16.
RATE_CASES = [
    {},
    {"sample_rate_hz": 8000},
    {"sample_rate": 24000, "audio": {"input": {"sample_rate_hz": 16000}}},
    {"sample_rate_hz": 8000, "sample_rate": 24000},
    {"sample_rate_hz": 0, "audio": {"input": {"sample_rate": 22050}}},
    {"audio": {"input": {"sample_rate_hz": 8000, "format": {"type": "mulaw", "rate": 24000}}}},
    {"audio": {"input": {"format": {"type": "audio/g711_ulaw", "rate": 24000}}}},
    {"sample_rate_hz": 12000, "audio": {"input": {"format": ULAW_TOLD}}},
    {"sample_rate_hz": "16k", "audio": {"input": {"sample_rate_hz": 8000}}},
    {"sample_rate_hz": 44100.7},
]


@pytest.mark.parametrize("case", range(len(RATE_CASES)))
@pytest.mark.parametrize("name", ["g711_ulaw", "pcm16"])
def test_the_input_rate_is_found_where_the_wheel_finds_it(
    wheel_session: types.ModuleType, case: int, name: str
) -> None:
    """Every native session reads the input rate as the wheel's
    ``apply_realtime_session_defaults`` does, G.711's too."""
    body = RATE_CASES[case]
    fmt_spec = body.get("audio", {}).get("input", {}).get("format")
    session = body if fmt_spec is not None else {"input_audio_format": name, **body}
    wheel = wheel_session.RealtimeInputDefaults().with_session_payload(session)
    encoding = {"pcm16": PCM16, "g711_ulaw": PCMU}[wheel.input_audio_format]
    for s in native_sessions():
        sc = Script(s)
        out = sc.client(update(**session))
        assert not [e for e in client_events(out) if e["type"] == "error"], out
        assert s.config.input_format == AudioFormat(encoding, wheel.input_sample_rate_hz)


def test_a_rate_update_keeps_the_format_and_a_format_update_the_rate(
    wheel_session: types.ModuleType,
) -> None:
    """The wheel keeps the rate apart from the format, across updates."""
    steps = [
        {"input_audio_format": "pcm16", "sample_rate_hz": 24000},
        {"input_audio_format": "g711_alaw"},
        {"sample_rate": 8000},
        {"audio": {"input": {"format": "pcm16"}}},
    ]
    for s in native_sessions():
        sc, wheel = Script(s), wheel_session.RealtimeInputDefaults()
        for step in steps:
            sc.client(update(**step))
            wheel = wheel.with_session_payload(step)
            encoding = {"pcm16": PCM16, "g711_alaw": PCMA}[wheel.input_audio_format]
            assert s.config.input_format == AudioFormat(encoding, wheel.input_sample_rate_hz)


def test_a_ga_clients_g711_stays_8_khz() -> None:
    """GA's G.711 names no rate, and one other than 8000 is refused as before."""
    for s in (
        GaRelaySession(SID, "m", SETTINGS, {}),
        TurnBasedSession(SID, "m", "m-up", SETTINGS),
    ):
        sc = Script(s)
        sc.client(update(audio={"input": {"format": {"type": "audio/pcmu"}}}))
        assert s.config.input_format == AudioFormat(PCMU, 8000)
        out = sc.client(update(audio={"input": {"format": {"type": "audio/pcmu", "rate": 16000}}}))
        (err,) = [e for e in client_events(out) if e["type"] == "error"]
        assert err["error"]["code"] == "invalid_value"


def test_the_session_object_a_native_client_is_told_can_be_sent_back() -> None:
    """Over a turn-based upstream the proxy tells a native client its session in
    vLLM-Omni's shape and names (``realtime_session_payload``); sent back, it changes
    nothing and is not refused (GA's ``audio/pcmu`` would be)."""
    s = TurnBasedSession(SID, "m", "m-up", SETTINGS, native_client=True)
    sc = Script(s)
    (told,) = client_events(sc.client(update(input_audio_format="g711_ulaw")))
    session = told["session"]
    assert session["input_audio_format"] == "g711_ulaw"
    assert session["audio"]["input"] == {"format": ULAW_TOLD, "sample_rate_hz": 16000}
    before = s.config
    (again,) = client_events(sc.client(update(**session)))
    assert again["type"] == "session.updated" and again["session"] == session
    assert s.config == before


@pytest.mark.parametrize("rate", [24000, 8000])
@pytest.mark.parametrize("kind", ["relay", "turn"])
def test_a_resume_keeps_a_native_g711_rate(kind: str, rate: int) -> None:
    """The snapshot keeps a native client's G.711 rate, 8 kHz too (not the fresh
    session's 16 kHz): another replica reads the client's audio as before (and the
    input clock is told so)."""
    made = native_sessions()
    one = made[0] if kind == "relay" else made[1]
    Script(one).client(update(input_audio_format="g711_ulaw", sample_rate_hz=rate))
    # The stored input is ["pcmu", rate], as before the rate was always written back.
    assert one.snapshot()["input_format"] == [PCMU, rate]
    assert one.config.input_format == AudioFormat(PCMU, rate)
    other = native_sessions()[0 if kind == "relay" else 1]
    other.restore(one.snapshot())
    assert other.config.input_format == AudioFormat(PCMU, rate)
    assert other.config.native


def test_untagged_g711_appends_are_read_at_the_sessions_rate() -> None:
    """An append naming G.711 but no rate is at the session's rate, as vLLM-Omni reads
    it, not 8 kHz: 16 kHz μ-law of 200 ms is 3200 samples on the 16 kHz timeline."""
    for s in native_sessions():
        sc = Script(s)
        before = s.history.end
        quiet = b64(b"\xff" * 3200)  # μ-law silence, 200 ms at 16 kHz
        out = sc.client({"type": "input_audio_buffer.append", "audio": quiet, "format": "ulaw"})
        assert not [e for e in client_events(out) if e["type"] == "error"], out
        assert 3200 - 40 <= s.history.end - before <= 3200
        assert not isinstance(s, BargeInRelaySession) or upstream_events(out)


def test_an_appends_format_is_read_as_the_wheels_decode_audio_append_reads_it() -> None:
    """Any spelling vLLM-Omni reads is taken (``audio/pcm16``); an object with no
    ``type`` is refused, not read as the session's format."""
    for s in native_sessions():
        sc = Script(s)
        pcm = b64(bytes(640))  # 20 ms at 16 kHz
        before = s.history.end
        out = sc.client(
            {"type": "input_audio_buffer.append", "audio": pcm, "format": "audio/pcm16"}
        )
        assert not [e for e in client_events(out) if e["type"] == "error"], out
        assert s.history.end > before
        before = s.history.end
        untyped = {"type": "input_audio_buffer.append", "audio": pcm, "format": {"rate": 24000}}
        out = sc.client(untyped)
        assert s.history.end == before  # not taken
        # Refused by the turn-based session itself; a relay leaves it to its upstream.
        errors = [e["error"]["code"] for e in client_events(out) if e["type"] == "error"]
        assert errors == (
            [] if isinstance(s, BargeInRelaySession) else ["unsupported_audio_format"]
        )


# ---- on real speech, through the proxy and straight to the stand-in ----


def ulaw(pcm24: bytes, rate: int) -> bytes:
    samples = soxr.resample(np.frombuffer(pcm24, "<i2"), 24000, rate)
    return int16_to_g711(samples.astype(np.int16), ULAW)


SPEECH = load_clip("utt05_clean.wav") + silence(800)  # 4.0 s at 24 kHz


@asynccontextmanager
async def session_through(
    through: str, opened: dict[str, Any], reply_ms: int = 1000
) -> AsyncIterator[Client]:
    """A native session opened with ``opened``, straight to the strict duplex
    stand-in or through the proxy in the mode named."""
    if through == "stand-in":
        options = ReferenceOptions(fidelity="strict")
        async with (
            reference("duplex", reply_ms=reply_ms, options=options) as upstream,
            connect(upstream + "?duplex=1&autostart=0&model=m") as c,
        ):
            await c.send(opened)
            await c.until("session.created")
            yield c
        return
    kind = {"barge_in_emulated": "duplex-no-barge-in", "duplex_emulated": "turn"}[through]
    async with native_session(kind, through, reply_ms, opened) as c:
        yield c


async def heard_s(c: Client) -> float:
    await c.send({"type": "input_audio_buffer.commit", "final": True})
    done = await c.until("response.done", timeout=30)
    assert not c.of("error"), c.of("error")
    transcript = done["response"]["output"][0]["content"][0]["transcript"]
    heard = re.search(r"heard about ([0-9.]+) seconds", transcript)
    assert heard, transcript
    return float(heard.group(1))


THROUGH = ["stand-in", "barge_in_emulated", "duplex_emulated"]


@pytest.mark.parametrize("through", THROUGH)
async def test_untagged_16_khz_mulaw_is_heard_at_16_khz(through: str) -> None:
    """``DuplexClient``'s opening with G.711 (its ``sample_rate_hz`` 16000) and appends
    that name no format or rate: vLLM-Omni reads them at 16 kHz. So do the stand-in
    and the proxy (over a turn-based upstream the proxy itself reads them)."""
    opened = opening(input_audio_format="g711_ulaw", output_audio_format="g711_ulaw")
    async with session_through(through, opened) as c:
        audio = ulaw(SPEECH, 16000)
        for i in range(0, len(audio), 3200):
            await c.send({"type": "input_audio_buffer.append", "audio": b64(audio[i : i + 3200])})
        assert await heard_s(c) == pytest.approx(4.0, abs=0.3)


@pytest.mark.parametrize("through", THROUGH)
async def test_the_flat_sample_rate_comes_before_audio_input(through: str) -> None:
    """The flat ``sample_rate`` (24 kHz) wins over ``audio.input.sample_rate_hz``
    (16 kHz): untagged 24 kHz PCM16 lasts 4 s."""
    opened = opening(sample_rate_hz=None, sample_rate=24000)
    async with session_through(through, opened) as c:
        await say_untagged(c, SPEECH)
        assert await heard_s(c) == pytest.approx(4.0, abs=0.3)


@pytest.mark.parametrize("through", THROUGH)
async def test_the_told_session_object_goes_back_unrefused(through: str) -> None:
    """A native client that sends back the session object it was told (a G.711 one:
    vLLM-Omni names it ``{"type": "audio/g711_ulaw", "rate": 16000}``) is not
    refused, and its audio is read as before."""
    opened = opening(input_audio_format="g711_ulaw")
    async with session_through(through, opened) as c:
        created = c.of("session.created")[0]["session"]
        told = {k: v for k, v in created.items() if k in ("input_audio_format", "audio")}
        assert told["input_audio_format"] == "g711_ulaw"
        await c.send(update(**told))
        await c.send({"type": "session.heartbeat"})
        await c.until("session.heartbeat_ack")
        assert not c.of("error"), c.of("error")
        audio = ulaw(SPEECH, 16000)
        for i in range(0, len(audio), 3200):
            await c.send({"type": "input_audio_buffer.append", "audio": b64(audio[i : i + 3200])})
        assert await heard_s(c) == pytest.approx(4.0, abs=0.3)


def b64(raw: bytes) -> str:
    return pybase64.b64encode(raw).decode()


async def say_untagged(c: Client, pcm: bytes) -> None:
    for i in range(0, len(pcm), 9600):
        await c.send({"type": "input_audio_buffer.append", "audio": b64(pcm[i : i + 9600])})


PCM_200MS_16K = b64(b"\x00\x01" * 3200)
# An append's own keys as vLLM-Omni reads them (``decode_audio_append``), and how many
# samples 3200 of them (or 6400 bytes of PCM16) make on the 16 kHz timeline.
APPENDS = [
    ({"sample_rate": 8000}, 6400),  # PCM16 at 8 kHz: 400 ms
    ({"sample_rate_hz": 0, "sample_rate": 32000}, 1600),
    ({"sample_rate_hz": 0}, 3200),  # no rate: the session's
    ({"sample_rate_hz": "fast"}, 3200),  # no number: 16 kHz, as its runner takes it
    ({"format": "", "input_audio_format": "pcm16", "sample_rate_hz": 8000}, 6400),
    ({"format": {"type": "audio/pcm16", "rate": 32000}}, 1600),
    ({"format": {"type": "pcm16", "rate": 32000}, "sample_rate_hz": 8000}, 6400),
]


@pytest.mark.parametrize(("keys", "heard"), APPENDS)
def test_an_append_names_its_format_and_rate_as_vllm_omni_reads_them(
    keys: dict[str, Any], heard: int
) -> None:
    """In both emulated modes a native client's append is heard at the format and rate
    vLLM-Omni reads it at, and refused by neither."""
    for s in native_sessions():
        sc = Script(s)
        before = s.history.end
        out = sc.client({"type": "input_audio_buffer.append", "audio": PCM_200MS_16K, **keys})
        assert not [e for e in client_events(out) if e["type"] == "error"], out
        assert heard - 40 <= s.history.end - before <= heard, type(s).__name__
