"""Accept a client WebSocket, or refuse it when this replica is draining (a full
replica or route refuses a new session once it is routed: ``client_session.py``)."""

from __future__ import annotations

import orjson
from aiohttp import web

from proxy.auth.admission import admitted
from proxy.auth.credentials import SUBPROTOCOLS
from proxy.client_limits import read_cap
from proxy.client_outbox import own_event_id
from proxy.handshake.client_session import ClientSession
from proxy.state import ProxyState
from proxy.ws_direct import ClientResponse


@admitted  # 401/403/429 before the upgrade (proxy/auth/admission.py)
async def handle_client(request: web.Request, state: ProxyState) -> web.WebSocketResponse:
    cfg = state.config.server
    ws = ClientResponse(  # a web.WebSocketResponse (proxy/ws_direct.py)
        max_msg_size=read_cap(cfg.max_frame_bytes),
        autoping=True,
        heartbeat=cfg.client_heartbeat_s or None,  # only sent once the client is quiet
        compress=False,
        protocols=SUBPROTOCOLS,
    )
    await ws.prepare(request)
    session = ClientSession(ws, request, state)
    if state.draining:
        await ws.send_str(
            orjson.dumps(
                {
                    "type": "error",
                    "event_id": own_event_id(),
                    "error": {
                        "type": "rate_limit_error",
                        "code": "server_shutting_down",
                        "message": "this replica is draining; reconnect",
                        "event_id": None,
                        "param": None,
                    },
                }
            ).decode()
        )
        await ws.close(code=1012, message=b"draining")
        return ws
    state.sessions.add(session)
    try:
        await session.run()
    finally:
        state.sessions.discard(session)
    return ws
