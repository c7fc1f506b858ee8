"""An upstream that refuses server VAD in its opening config still gets a session.

vLLM-Omni validates ``turn_detection`` when a session opens (``server_vad`` needs an
overlap policy the model supports; errors come back as ``invalid_session_config``).
The upstream here is a minimal stand-in that does exactly that and nothing more: a
model without barge-in cannot run on this machine.
"""

from __future__ import annotations

import json

from aiohttp import WSMsgType, web

from tests.servers import connect, proxy, proxy_config, serve_app, ws_url

CAPS = {"supports_barge_in": False, "supports_session_resume": False}


async def strict_upstream(request: web.Request) -> web.WebSocketResponse:
    ws = web.WebSocketResponse()
    await ws.prepare(request)
    async for msg in ws:
        if msg.type != WSMsgType.TEXT:
            break
        event = json.loads(msg.data)
        session = event.get("session") if isinstance(event.get("session"), dict) else event
        audio_in = (session.get("audio") or {}).get("input") or {}
        if "turn_detection" in session or "turn_detection" in audio_in:
            await ws.send_json(
                {
                    "type": "error",
                    "event_id": "event_1",
                    "error": {
                        "type": "invalid_request_error",
                        "code": "invalid_session_config",
                        "message": "server_vad needs overlap_policy barge_in_on_speech",
                    },
                }
            )
            await ws.close()
            break
        await ws.send_json(
            {
                "type": "session.created",
                "event_id": "event_2",
                "session": {"id": "duplex-1", "capabilities": CAPS},
            }
        )
    return ws


async def test_turn_detection_is_dropped_from_the_opening_and_kept_by_the_proxy() -> None:
    app = web.Application()
    app.router.add_get("/v1/realtime", strict_upstream)
    async with serve_app(app) as upstream_base:
        upstream = upstream_base.replace("http://", "ws://") + "/v1/realtime"
        async with proxy(proxy_config({"m": upstream})) as base, connect(ws_url(base)) as c:
            td = {"type": "server_vad", "silence_duration_ms": 350}
            await c.send(
                {
                    "type": "session.update",
                    "session": {"type": "realtime", "audio": {"input": {"turn_detection": td}}},
                }
            )
            created = await c.until("session.created")
            caps = created["session"]["capabilities"]
            assert caps["proxy"]["mode"] == "barge_in_emulated"
            assert caps["supports_barge_in"] is True
            turn = created["session"]["audio"]["input"]["turn_detection"]
            assert turn["silence_duration_ms"] == 350, "the proxy applies the client's VAD itself"
