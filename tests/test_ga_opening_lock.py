"""A GA client's own opening ``session.update`` through the proxy over the strict
duplex stand-in: it opens the upstream session (``proxy/handshake/open_upstream.py``),
so the instructions lock follows what it opened with
(``proxy/emulated/shim_setup.py``, ``apply_opening``). Opened auto-responding, a whole
chunk of audio (the stand-in's 200 ms) locks the model's context, and the proxy
refuses a change of the instructions itself, as the upstream would."""

from __future__ import annotations

from proxy.reference.options import ReferenceOptions
from tests.servers import connect, proxy, proxy_config, reference, silence, ws_url
from tests.upstream_tap import upstream_tap


async def test_an_auto_responding_opening_locks_at_its_first_whole_chunk() -> None:
    strict = ReferenceOptions(fidelity="strict")
    async with reference("duplex", options=strict) as backend:
        async with (
            upstream_tap(backend) as (tap, tapped),
            proxy(proxy_config({"m": tapped})) as base,
        ):
            async with connect(ws_url(base)) as c:
                opening = {"instructions": "a", "extra_body": {"auto_response": True}}
                await c.send({"type": "session.update", "session": {"type": "realtime", **opening}})
                await c.until("session.created")
                await c.stream(silence(300), realtime=False)
                await c.send({"type": "session.update", "session": {"instructions": "b"}})
                error = await c.until("error")
                assert error["error"]["code"] == "instructions_update_unsupported", error
                updated = await c.until("session.updated")
                assert updated["session"]["instructions"] == "a"
        sent = [e["session"] for e in tap.sent[0] if e["type"] == "session.update"]
        assert sent[0]["extra_body"]["auto_response"] is True  # the client's opening
        assert all(s.get("instructions") != "b" for s in sent)  # nothing the upstream refuses
