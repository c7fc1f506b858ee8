"""The operator's [vad] section is what a new session's server VAD starts from
(README "Configuration"), in both emulated modes, until the client says otherwise."""

from __future__ import annotations

import pytest

from tests.servers import connect, proxy, proxy_config, reference, ws_url
from tests.upstream_tap import upstream_tap

VAD = {"threshold": 0.6, "prefix_padding_ms": 200, "silence_duration_ms": 700, "min_speech_ms": 120}


@pytest.mark.parametrize(
    ("kind", "mode"), [("turn", "duplex_emulated"), ("duplex", "barge_in_emulated")]
)
async def test_a_new_session_starts_from_the_configured_vad(kind: str, mode: str) -> None:
    async with reference(kind) as upstream:
        cfg = proxy_config({"m": upstream}, vad=VAD)
        async with proxy(cfg) as base, connect(ws_url(base)) as c:
            created = await c.until("session.created")
            assert created["session"]["capabilities"]["proxy"]["mode"] == mode
            td = created["session"]["audio"]["input"]["turn_detection"]
            assert td["type"] == "server_vad"
            assert td["threshold"] == VAD["threshold"]
            assert td["prefix_padding_ms"] == VAD["prefix_padding_ms"]
            assert td["silence_duration_ms"] == VAD["silence_duration_ms"]
            assert td["min_speech_duration_ms"] == VAD["min_speech_ms"]
            # A partial update keeps what it does not name.
            await c.send(
                {
                    "type": "session.update",
                    "session": {
                        "type": "realtime",
                        "audio": {
                            "input": {"turn_detection": {"type": "server_vad", "threshold": 0.7}}
                        },
                    },
                }
            )
            updated = await c.until("session.updated")
            td = updated["session"]["audio"]["input"]["turn_detection"]
            assert td["threshold"] == 0.7
            assert td["silence_duration_ms"] == VAD["silence_duration_ms"]


async def test_a_ga_clients_upstream_vad_opens_from_the_configured_section() -> None:
    """The upstream detects a GA client's turns in barge_in_emulated: its server VAD
    opens with the [vad] values too, in the fields vLLM-Omni reads (shim/ga_upstream.py)."""
    async with reference("duplex") as backend, upstream_tap(backend) as (tap, tapped):
        async with proxy(proxy_config({"m": tapped}, vad=VAD)) as base:
            async with connect(ws_url(base)) as c:
                await c.until("session.created")
        opening = next(e for e in tap.sent[0] if e.get("type") == "session.update")
        assert opening["session"]["turn_detection"] == {
            "type": "server_vad",
            "threshold": VAD["threshold"],
            "prefix_padding_ms": VAD["prefix_padding_ms"],
            "silence_duration_ms": VAD["silence_duration_ms"],
            "min_speech_duration_ms": VAD["min_speech_ms"],
        }
        # The strict stand-in refuses what vLLM-Omni refuses: the session opened.
        assert not [e for e in tap.answered[0] if e.get("type") == "error"], tap.answered[0]
