"""The input rate limit counts audio time, not bytes (docs/protocol.md, "Errors"):
a G.711 client (8 kHz, one byte a sample) gets the allowance of real time that a
24 kHz PCM16 client gets, not six times it. Through the proxy: in every mode, at the
format the session (or the upstream, in passthrough) accepted, through a resume too.
The clock itself: tests/test_input_rate_clock.py.
"""

from __future__ import annotations

from pathlib import Path

import pybase64

from tests.cli_processes import Procs, procs
from tests.flood_stack import served
from tests.input_rate_events import PCMU, append
from tests.native_client_session import NATIVE, opening
from tests.servers import connect, proxy, proxy_config, reference, replica, ws_url

__all__ = ["procs"]  # the fixture, used by name


async def test_a_g711_client_is_held_to_real_time_like_any_other(
    procs: Procs, tmp_path: Path
) -> None:
    async with reference("turn", reply_ms=600) as upstream:
        server = "input_realtime_factor = 1.0\ninput_burst_s = 1.0\ninput_rate_grace_s = 60.0\n"
        proc, base = await served(procs, tmp_path, server, upstream)
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
