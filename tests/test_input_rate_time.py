"""The input rate limit counts audio time, not bytes (docs/protocol.md, "Errors"):
a G.711 client (8 kHz, one byte a sample) gets the allowance of real time that a
24 kHz PCM16 client gets, not six times it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import orjson
import pybase64
import pytest

from proxy.client_limits import AUDIO_BYTES_PER_S, InputClock
from shim.audio import PCMU as ULAW
from shim.audio import AudioFormat
from tests.servers import connect, proxy, proxy_config, reference, replica, ws_url
from tests.cli_processes import Procs
from tests.test_input_flood import served
from tests.test_native_relay import NATIVE, opening

PCMU_TOLD = {"audio": {"input": {"format": {"type": "audio/pcmu"}}}}
PCMU = {"type": "session.update", "session": PCMU_TOLD}


def append(n_bytes: int, **extra: object) -> dict[str, object]:
    audio = pybase64.b64encode(b"\xff" * n_bytes).decode()
    return {"type": "input_audio_buffer.append", "audio": audio, **extra}


def told(session: object) -> dict[str, object]:
    return {"type": "session.updated", "session": session}


def test_a_second_of_audio_costs_a_second_in_every_format() -> None:
    clock = InputClock()
    assert clock.cost(append(48000)) == AUDIO_BYTES_PER_S  # 24 kHz PCM16 by default
    clock.accepted(PCMU_TOLD)
    assert clock.cost(append(8000)) == AUDIO_BYTES_PER_S  # a second of G.711
    # An append naming its own format and rate (vLLM-Omni's clients) is read so.
    assert clock.cost(append(32000, format="pcm16", sample_rate_hz=16000)) == AUDIO_BYTES_PER_S
    clock.accepted({"input_audio_format": "pcm_f32le", "sample_rate_hz": 16000})  # vLLM-Omni's
    assert clock.cost(append(64000)) == AUDIO_BYTES_PER_S
    assert clock.cost({"type": "input_audio_buffer.commit"}) == 0


def test_the_clock_follows_what_the_session_told_not_what_the_client_asked() -> None:
    clock = InputClock()
    # The session may refuse it, or apply part of it: only what it tells counts.
    assert clock.cost(PCMU) == 0
    assert clock.cost(append(48000)) == AUDIO_BYTES_PER_S
    clock.told(orjson.dumps(told(PCMU_TOLD)).decode())
    assert clock.cost(append(8000)) == AUDIO_BYTES_PER_S
    pcm16k = {"audio": {"input": {"format": {"type": "audio/pcm", "rate": 16000}}}}
    clock.told(orjson.dumps({"type": "session.created", "session": pcm16k}).decode())
    assert clock.cost(append(32000)) == AUDIO_BYTES_PER_S
    # What names no format, or none readable, leaves it as it was; nothing raises.
    td = {"type": "semantic_vad", "eagerness": ["high"]}
    for session in ({"audio": {"input": {"turn_detection": td}}}, {"audio": [1]}, 5, None):
        clock.accepted(session)
        clock.told(orjson.dumps(told(session)).decode())
    for bad in (5, "audio/ogg", {"type": 7}, {"type": "audio/pcm", "rate": "x"}):
        clock.accepted({"audio": {"input": {"format": bad}}})
        clock.told(orjson.dumps(told({"input_audio_format": bad})).decode())
    assert clock.cost(append(32000)) == AUDIO_BYTES_PER_S
    clock.told('{not json, but "session."')
    assert clock.cost(append(8000, format=["x"], sample_rate_hz={})) > 0


def test_the_clock_reads_vllm_omni_session_objects_in_its_spellings() -> None:
    # vLLM-Omni tells its session as ``realtime_audio_format_object`` spells it: a
    # G.711 object names the session's rate, which GA's never does.
    for name, rate in (("g711_ulaw", 16000), ("g711_alaw", 8000)):
        clock = InputClock()
        fmt = {"type": f"audio/{name}", "rate": rate}
        clock.told(
            orjson.dumps(
                told({"input_audio_format": name, "audio": {"input": {"format": fmt}}})
            ).decode()
        )
        assert clock.cost(append(rate)) == AUDIO_BYTES_PER_S, name
    for spelling in ("mulaw", "audio/g711_ulaw", {"type": "ulaw"}):
        clock = InputClock()
        clock.accepted({"audio": {"input": {"format": spelling}}})
        assert clock.cost(append(8000)) == AUDIO_BYTES_PER_S, spelling


def test_a_session_event_of_any_size_is_read_by_its_type() -> None:
    # A session object may carry long instructions or tools: its size says nothing.
    pcmu = {**PCMU_TOLD, "instructions": "x" * 100_000}
    for frame in (told(pcmu), {"type": "session.created", "session": pcmu}):
        clock = InputClock()
        clock.told(orjson.dumps(frame).decode())
        assert clock.cost(append(8000)) == AUDIO_BYTES_PER_S, frame["type"]
    # Python's json spells ``"type": "..."`` with a space.
    clock = InputClock(native=True)
    clock.told('{"type": "session.updated", "session": {"input_audio_format": "g711_ulaw"}}')
    # vLLM-Omni's object naming no rate: its own, 16 kHz (``protocol/realtime/session.py``).
    assert clock.cost(append(16000)) == AUDIO_BYTES_PER_S
    # Another event naming a session format in its text is no session event.
    clock = InputClock()
    delta = {
        "type": "response.output_text.delta",
        "delta": '"session.updated"',
        "session": PCMU_TOLD,
    }
    clock.told(orjson.dumps(delta).decode())
    assert clock.cost(append(48000)) == AUDIO_BYTES_PER_S


def test_a_native_clients_clock_reads_its_session_as_vllm_omni_does() -> None:
    """vLLM-Omni echoes the client's ``audio`` object but applies the flat keys first
    (``apply_realtime_session_defaults``), and ignores a rate that is no number."""
    clock = InputClock(native=True)
    assert clock.cost(append(32000)) == AUDIO_BYTES_PER_S  # 16 kHz until told
    echoed = {"type": "audio/pcm", "rate": 24000}
    clock.accepted(
        {
            "input_audio_format": "pcm16",
            "sample_rate_hz": 16000,
            "audio": {"input": {"format": echoed}},
        }
    )
    assert clock.cost(append(32000)) == AUDIO_BYTES_PER_S  # 16 kHz, not the echoed 24
    # "16k" is not applied, and hides audio.input's rate: the format still is.
    clock.accepted(
        {
            "input_audio_format": "g711_ulaw",
            "sample_rate_hz": "16k",
            "audio": {"input": {"sample_rate_hz": 8000}},
        }
    )
    assert clock.input_format == AudioFormat(ULAW, 16000)
    assert clock.cost(append(16000)) == AUDIO_BYTES_PER_S


def test_a_ga_clients_clock_is_ga_whatever_keys_the_session_holds() -> None:
    """A GA client's ``session.created`` over a duplex upstream holds the upstream's
    flat keys too: the clock stays a GA client's (an untagged-rate G.711 append is
    8 kHz), and a beta-shaped object naming no rate is 24 kHz PCM16 / 8 kHz G.711."""
    clock = InputClock()
    ga = {"type": "audio/pcm", "rate": 24000}
    clock.accepted(
        {"input_audio_format": "pcm16", "sample_rate_hz": 16000, "audio": {"input": {"format": ga}}}
    )
    assert clock.cost(append(48000)) == AUDIO_BYTES_PER_S
    assert clock.cost(append(8000, format="g711_ulaw")) == AUDIO_BYTES_PER_S
    for beta, per_s in (("pcm16", 48000), ("g711_ulaw", 8000)):
        clock = InputClock()
        clock.told(orjson.dumps(told({"input_audio_format": beta})).decode())
        assert clock.cost(append(per_s)) == AUDIO_BYTES_PER_S, beta


@pytest.fixture
def processes(tmp_path: Path) -> Iterator[Procs]:
    p = Procs(tmp_path)
    try:
        yield p
    finally:
        p.close()


async def test_a_g711_client_is_held_to_real_time_like_any_other(
    processes: Procs, tmp_path: Path
) -> None:
    async with reference("turn", reply_ms=600) as upstream:
        server = "input_realtime_factor = 1.0\ninput_burst_s = 1.0\ninput_rate_grace_s = 60.0\n"
        proc, base = await served(processes, tmp_path, server, upstream)
        async with connect(ws_url(base)) as c:
            await c.until("session.created")
            await c.send(PCMU)
            await c.until("session.updated")
            for _ in range(40):  # 4 s of G.711 at once: 4x the 1 s burst
                await c.send(append(800))
            err = await c.until("error", timeout=20)
            assert err["error"]["code"] == "input_rate_exceeded", err
        proc.check_alive()


async def test_a_format_the_session_refused_does_not_change_what_audio_costs() -> None:
    limits = {"input_realtime_factor": 1.0, "input_burst_s": 2.0, "input_rate_grace_s": 60.0}
    async with (
        reference("turn", reply_ms=600) as up,
        proxy(proxy_config({"m": up}, server=limits)) as base,
        connect(ws_url(base, **NATIVE)) as c,
    ):
        await c.send(opening(turn_detection=None))  # 16 kHz PCM16
        await c.until("session.created")
        await c.send(PCMU)  # a GA name, which vLLM-Omni's protocol does not have
        assert (await c.until("error"))["error"]["code"] == "unsupported_audio_format"
        for _ in range(3):  # 1.5 s of 16 kHz PCM16 at once, inside the 2 s burst
            await c.send(append(16000))
        await c.send({"type": "session.update", "session": {"voice": "alloy"}})
        seen = []
        while (event := await c.recv())["type"] != "session.updated":
            seen.append(event)
        codes = [e["error"]["code"] for e in seen if e["type"] == "error"]
        assert "input_rate_exceeded" not in codes, seen


async def test_in_passthrough_audio_costs_its_time_at_the_format_the_upstream_accepted() -> None:
    limits = {"input_realtime_factor": 1.0, "input_burst_s": 2.0, "input_rate_grace_s": 60.0}
    f32 = {"input_audio_format": "pcm_f32le", "sample_rate_hz": 16000}
    async with (
        reference("duplex", reply_ms=600) as up,
        proxy(proxy_config({"m": up}, server=limits)) as base,
        connect(ws_url(base, **NATIVE)) as c,
    ):
        await c.send(opening(turn_detection=None, audio={"input": {}}, **f32))
        await c.until("session.created")
        opened = await c.until("session.updated")  # the upstream's answer to the opening
        assert opened["session"]["input_audio_format"] == "pcm_f32le", opened
        # 1.8 s of 16 kHz float at once, in the 2 s burst (2.4 s if read as 24 kHz PCM16).
        silence = pybase64.b64encode(bytes(38400)).decode()  # float zeros, 0.6 s
        for _ in range(3):
            await c.send({"type": "input_audio_buffer.append", "audio": silence})
        await c.send({"type": "session.update", "session": {"voice": "alloy"}})
        seen = []
        while (event := await c.recv())["type"] != "session.updated":
            seen.append(event)
        assert not [e for e in seen if e["type"] == "error"], seen


async def test_a_resumed_session_counts_audio_at_the_format_it_accepted_before() -> None:
    limits = {"input_realtime_factor": 1.0, "input_burst_s": 2.0, "input_rate_grace_s": 60.0}
    pcm48k = {"audio": {"input": {"format": {"type": "audio/pcm", "rate": 48000}}}}
    async with reference("turn", reply_ms=600) as up:
        config = proxy_config({"m": up}, store={"url": "memory://"}, server=limits)
        async with replica(config, "a") as base:
            async with connect(ws_url(base)) as c1:
                created = await c1.until("session.created")
                await c1.send({"type": "session.update", "session": pcm48k})
                seq = (await c1.until("session.updated"))["server_event_seq"]
            query = {
                "session_id": created["session"]["id"],
                "resume_token": created["resume_token"],
                "last_received_server_event_seq": str(seq),
            }
            async with connect(ws_url(base, model=None, **query)) as c2:
                assert (await c2.recv())["type"] == "session.resumed"
                # 1.8 s of 48 kHz PCM16 at once, in the 2 s burst (3.6 s if read as 24 kHz).
                for _ in range(3):
                    await c2.send(append(57600))
                await c2.send({"type": "session.update", "session": {"type": "realtime"}})
                seen = []
                while (event := await c2.recv())["type"] != "session.updated":
                    seen.append(event)
                assert not [e for e in seen if e["type"] == "error"], seen


async def test_a_passthrough_resume_counts_audio_at_the_format_the_upstream_resumed() -> None:
    limits = {"input_realtime_factor": 1.0, "input_burst_s": 2.0, "input_rate_grace_s": 60.0}
    f32 = {"input_audio_format": "pcm_f32le", "sample_rate_hz": 16000}
    async with reference("duplex", reply_ms=600) as up:
        config = proxy_config({"m": up}, store={"url": "memory://"}, server=limits)
        async with replica(config, "a") as base:
            async with connect(ws_url(base, **NATIVE)) as c1:
                await c1.send(opening(turn_detection=None, audio={"input": {}}, **f32))
                created = await c1.until("session.created")
                opened = await c1.until("session.updated")
                assert opened["session"]["input_audio_format"] == "pcm_f32le", opened
                seqs = [e["server_event_seq"] for e in c1.events if "server_event_seq" in e]
            async with connect(ws_url(base)) as c2:
                await c2.send(
                    {
                        "type": "session.resume",
                        "session_id": created["session"]["id"],
                        "resume_token": created["resume_token"],
                        "last_received_server_event_seq": max(seqs, default=0),
                    }
                )
                first = await c2.recv()
                assert first["type"] == "session.resumed", first
                assert first["session"]["input_audio_format"] == "pcm_f32le", first
                # 1.8 s of 16 kHz float at once, in the 2 s burst (2.4 s as 24 kHz PCM16).
                silence = pybase64.b64encode(bytes(38400)).decode()  # float zeros, 0.6 s
                for _ in range(3):
                    await c2.send({"type": "input_audio_buffer.append", "audio": silence})
                await c2.send({"type": "session.update", "session": {"voice": "alloy"}})
                seen = []
                while (event := await c2.recv())["type"] != "session.updated":
                    seen.append(event)
                assert not [e for e in seen if e["type"] == "error"], seen


async def test_a_native_resume_is_told_the_session_as_it_is_now() -> None:
    """``session.resumed`` tells a native client in ``barge_in_emulated`` its current
    session (the proxy's), not the upstream's object from the opening, and the input
    clock counts the format it tells."""
    limits = {"input_realtime_factor": 1.0, "input_burst_s": 2.0, "input_rate_grace_s": 60.0}
    ulaw8k = {"input_audio_format": "g711_ulaw", "sample_rate_hz": 8000}
    async with reference("duplex-no-barge-in", reply_ms=600) as up:
        config = proxy_config({"m": up}, store={"url": "memory://"}, server=limits)
        async with replica(config, "a") as base:
            async with connect(ws_url(base, **NATIVE)) as c1:
                await c1.send(opening())
                created = await c1.until("session.created")
                assert created["session"]["capabilities"]["proxy"]["mode"] == "barge_in_emulated"
                await c1.until("session.updated")  # the opening's
                await c1.send({"type": "session.update", "session": ulaw8k})
                updated = await c1.until("session.updated")
                assert updated["session"]["input_audio_format"] == "g711_ulaw", updated
                seqs = [e["server_event_seq"] for e in c1.events if "server_event_seq" in e]
            query = {
                "session_id": created["session"]["id"],
                "resume_token": created["resume_token"],
                "last_received_server_event_seq": str(max(seqs)),
            }
            async with connect(ws_url(base, model=None, **NATIVE, **query)) as c2:
                first = await c2.recv()
                assert first["type"] == "session.resumed", first
                session = first["session"]
                assert session["input_audio_format"] == "g711_ulaw", session
                assert session["audio"]["input"]["format"]["rate"] == 8000, session
                # 6 s of 8 kHz G.711 at once, 3x the 2 s burst (1.5 s if read as the
                # opening's 16 kHz PCM16).
                for _ in range(3):
                    await c2.send(append(16000))
                err = await c2.until("error", timeout=20)
                assert err["error"]["code"] == "input_rate_exceeded", err
