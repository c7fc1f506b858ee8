"""An echo upstream for the relay benchmark: a duplex ``session.created``, then every frame back.

It opens a session at once (as vLLM-Omni does with ``?model=`` and no ``autostart=0``)
declaring ``supports_barge_in: true``, so the proxy chooses ``passthrough``; then every
``input_audio_buffer.append`` comes back as a ``response.output_audio.delta`` carrying the
same payload (and so the client's own send timestamp). The reply is built by replacing the
type on the raw text: the echo costs the upstream as little as it can, so the benchmark
measures the relay in between.

    python bench/echo_upstream.py --port 9000
"""

from __future__ import annotations

import argparse
import json

from aiohttp import WSMsgType, web

# A native duplex session the proxy relays as it is (passthrough); tests/test_passthrough_order.py
# opens its upstream's sessions with it too.
SESSION_CREATED = {
    "type": "session.created",
    "session": {
        "id": "echo",
        "capabilities": {
            "supports_barge_in": True,
            "supports_playback_ack": True,
            "supports_audio_truncate": True,
            "supports_session_resume": False,
            # Else the proxy takes it for a one-session server (proxy/upstream_book.py).
            "supports_multi_session": True,
            "implementation_level": "model_native_duplex",
        },
    },
}
CREATED = json.dumps(SESSION_CREATED)
APPEND = '"type":"input_audio_buffer.append"'
DELTA = '"type":"response.output_audio.delta"'


async def echo(request: web.Request) -> web.WebSocketResponse:
    ws = web.WebSocketResponse(max_msg_size=0, compress=False)
    await ws.prepare(request)
    await ws.send_str(CREATED)
    async for msg in ws:
        if msg.type != WSMsgType.TEXT:
            continue
        if APPEND in msg.data:
            await ws.send_str(msg.data.replace(APPEND, DELTA, 1))
        elif '"session.update"' in msg.data:
            await ws.send_str('{"type":"session.updated","session":{}}')
    return ws


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    app = web.Application()
    app.router.add_get("/v1/realtime", echo)
    web.run_app(app, host=args.host, port=args.port, print=None, access_log=None)


if __name__ == "__main__":
    main()
