"""vLLM-Omni's other names for ``session.close`` end a native client's session in every mode.

vLLM-Omni 0.30.0 takes ``close`` and ``close_session`` as ``session.close``: the client
gets ``session.closed`` and the socket closes (1000). Over a duplex upstream the proxy
must not relay them on as events of a session it goes on serving: the upstream would
end its session under the proxy, which would open another in the background, holding
the upstream's slot (``proxy/emulated/session_controls.py``). A GA client has no such
event: for it they stay unknown.
"""

from __future__ import annotations

import pytest

from proxy.reference.options import ReferenceOptions
from tests.servers import closed, connect, proxied_client, proxy, proxy_config, reference, ws_url
from tests.vllm_client_through_proxy import IDS, MODES

pytestmark = pytest.mark.timeout(60)

OPENING = {"type": "session.update", "session": {"output_modalities": ["audio"]}}


@pytest.mark.parametrize("alias", ["close", "close_session"])
@pytest.mark.parametrize(("kind", "mode"), MODES, ids=IDS)
async def test_an_alias_closes_the_session_and_frees_the_upstreams_slot(
    kind: str, mode: str, alias: str
) -> None:
    # One upstream session at a time, as vLLM-Omni serves by default.
    options = ReferenceOptions(fidelity="strict", max_sessions=1)
    async with (
        reference(kind, options=options) as up,
        proxy(proxy_config({"m": up})) as base,
    ):
        for _ in range(2):  # the second opens only if the first let its slot go
            async with connect(ws_url(base, duplex="1", autostart="0")) as c:
                await c.send(OPENING)
                created = await c.until("session.created")
                assert created["session"]["capabilities"]["proxy"]["mode"] == mode
                await c.send({"type": alias})
                ended = await c.until("session.closed")
                assert ended["reason"] == "client_close" and "event" in ended, ended
                assert await closed(c) == 1000
                assert not c.of("error"), c.of("error")


async def test_a_ga_client_gets_no_alias() -> None:
    async with proxied_client("turn") as c:
        await c.until("session.created")
        await c.send({"type": "close", "event_id": "e1"})
        refused = await c.until("error")
        assert refused["error"]["event_id"] == "e1", refused
        await c.send({"type": "session.update", "session": {"type": "realtime"}})
        await c.until("session.updated")  # the session goes on
        assert not c.of("session.closed")
