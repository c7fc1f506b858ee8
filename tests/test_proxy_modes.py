"""The proxy in front of each reference backend: classification and a spoken turn."""

from __future__ import annotations

import pytest

from tests.servers import (
    connect,
    load_clip,
    proxy,
    proxy_config,
    reference,
    silence,
    ws_url,
)

# What a GA client (/v1/realtime without ?duplex=1) gets over each upstream kind: the
# proxy decides barge-in even over a duplex upstream that can (shim/capabilities.py).
MODES = [
    ("duplex", "barge_in_emulated"),
    ("duplex-no-barge-in", "barge_in_emulated"),
    ("turn", "duplex_emulated"),
]


@pytest.mark.parametrize(("kind", "mode"), MODES)
async def test_each_upstream_kind_gets_its_mode_and_completes_a_spoken_turn(
    kind: str, mode: str
) -> None:
    async with (
        reference(kind, reply_ms=800) as upstream,
        proxy(proxy_config({"m": upstream})) as base,
    ):
        async with connect(ws_url(base)) as c:
            await c.send({"type": "session.update", "session": {"type": "realtime"}})
            created = await c.until("session.created")
            caps = created["session"]["capabilities"]
            assert caps["proxy"]["mode"] == mode
            assert caps["supports_barge_in"] is True, "through the proxy every session can barge in"
            if kind == "duplex":
                assert caps["proxy"]["upstream"]["supports_barge_in"] is True
                assert any("GA client" in r for r in caps["proxy"]["reasons"])
            elif mode == "barge_in_emulated":
                assert caps["proxy"]["upstream"]["supports_barge_in"] is False
            else:
                assert caps["proxy"]["upstream"] is None
            await c.stream(load_clip("utt05_clean.wav") + silence(900), realtime=False)
            done = await c.until("response.done", timeout=20)
            assert done["response"]["status"] == "completed"
            audio = c.of("response.output_audio.delta")
            assert audio and all(isinstance(a["delta"], str) and a["delta"] for a in audio)
            seqs = [e["server_event_seq"] for e in c.events if "server_event_seq" in e]
            assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)


async def test_speak_first_client_opens_the_upstream_with_its_own_session_update() -> None:
    """vLLM-Omni's DuplexClient sends session.update first; open-only fields must survive."""
    async with (
        reference("duplex", reply_ms=500) as upstream,
        proxy(proxy_config({"m": upstream})) as base,
    ):
        async with connect(ws_url(base, autostart="0", duplex="1")) as c:
            await c.send(
                {
                    "type": "session.update",
                    "session": {
                        "model": "m",
                        "instructions": "be brief",
                        "ref_audio": "data:audio/wav;base64,AAAA",
                    },
                }
            )
            created = await c.until("session.created")
            assert created["session"]["instructions"] == "be brief"
            updated = await c.recv()
            assert updated["type"] == "session.updated", "no error for an open-only field"


async def test_ga_client_that_waits_gets_session_created_unprompted() -> None:
    async with reference("duplex") as upstream, proxy(proxy_config({"m": upstream})) as base:
        async with connect(ws_url(base)) as c:
            created = await c.until("session.created", timeout=5)
            assert created["session"]["capabilities"]["proxy"]["mode"] == "barge_in_emulated"


@pytest.mark.parametrize("where", [{"duplex": "1"}, {"path": "/v1/duplex"}])
async def test_native_client_over_a_duplex_upstream_that_can_barge_in_is_passed_through(
    where: dict[str, str],
) -> None:
    async with reference("duplex") as upstream, proxy(proxy_config({"m": upstream})) as base:
        async with connect(ws_url(base, **where)) as c:
            created = await c.until("session.created", timeout=5)
            assert created["session"]["capabilities"]["proxy"]["mode"] == "passthrough"


async def test_model_may_come_from_the_first_session_update() -> None:
    async with reference("turn") as upstream, proxy(proxy_config({"m": upstream})) as base:
        async with connect(ws_url(base, model=None)) as c:
            await c.send({"type": "session.update", "session": {"type": "realtime", "model": "m"}})
            created = await c.until("session.created")
            assert created["session"]["capabilities"]["proxy"]["mode"] == "duplex_emulated"


async def test_glob_route_and_upstream_model_rename() -> None:
    async with reference("turn", served_model="served-name") as upstream:
        cfg = proxy_config({})
        from dataclasses import replace

        from proxy.config import Route

        cfg = replace(
            cfg, routes=(Route(model="acme/*", upstream=upstream, upstream_model="served-name"),)
        )
        async with proxy(cfg) as base, connect(ws_url(base, model="acme/voice-1")) as c:
            await c.until("session.created")
            await c.stream(load_clip("utt04_clean.wav") + silence(900), realtime=False)
            done = await c.until("response.done", timeout=20)
            assert done["response"]["status"] == "completed", (
                "the upstream accepted the renamed model"
            )


@pytest.mark.parametrize(("kind", "mode"), MODES)
async def test_session_close_ends_the_session_cleanly(kind: str, mode: str) -> None:
    async with reference(kind) as upstream, proxy(proxy_config({"m": upstream})) as base:
        async with connect(ws_url(base)) as c:
            await c.send({"type": "session.update", "session": {"type": "realtime"}})
            await c.until("session.created")
            await c.send({"type": "session.close"})
            closed = await c.until("session.closed")
            assert closed["reason"] == "client_close"
            while not c.ws.closed:
                await c.ws.receive(timeout=5)
            assert c.ws.close_code == 1000
