"""One client fuzz session, and the stack it runs against (tests/test_fuzz_client.py).

The proxy in each mode over its reference backend (passthrough over ``duplex``,
barge_in_emulated over ``duplex-no-barge-in``, duplex_emulated over ``turn``), on loops
of their own (tests/fuzz_servers.py). A session sends its frames, each followed by a
``session.heartbeat`` that must be answered, checks the coded errors docs/protocol.md
promises, then a valid ``session.update``; ``check`` then asks that the proxy hold
nothing of it any more.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from functools import partial
from typing import Any

import aiohttp
import pybase64

from proxy.reference.options import ReferenceOptions
from tests.fuzz_client_frames import MAX_DEPTH, MAX_FRAME_BYTES, Frame, make_event
from tests.fuzz_servers import (
    STEP_TIMEOUT_S,
    ProxyUnderTest,
    proxy_thread,
    run_bounded,
    servers_thread,
)
from tests.fuzz_upstream_client import MODES, native
from tests.servers import proxy_config, reference, ws_url


class Stack:
    def __init__(self, proxy: ProxyUnderTest, baseline: list[str], faults_before: float) -> None:
        self.proxy, self.baseline, self.faults_before = proxy, baseline, faults_before

    def __repr__(self) -> str:
        return f"Stack({self.proxy.base})"


@contextlib.contextmanager
def open_stack() -> Iterator[Stack]:
    """The backends and the proxy, warmed up: one clean session per mode."""
    kinds_up = list(MODES.values())
    # Deployed for the sessions the examples open (several may be in their grace at once).
    options = ReferenceOptions(max_sessions=64)
    backends = (partial(reference, k, reply_ms=300, options=options) for k in kinds_up)
    with servers_thread(*backends) as urls:
        cfg = proxy_config(
            dict(zip(MODES, urls, strict=True)),
            server={
                "max_frame_bytes": MAX_FRAME_BYTES,
                "max_json_depth": MAX_DEPTH,
                "log_level": "critical",
            },
            store={"disconnect_grace_s": 0.3},
        )
        with proxy_thread(cfg) as proxy:
            # One clean session per mode first, with audio: what stays alive after it
            # (the process-wide VAD runner) is the baseline, not a leak.
            pcm = pybase64.b64encode(b"\0\0" * 4800).decode()
            audio = json.dumps(make_event("input_audio_buffer.append", {"audio": pcm}))
            for mode in MODES:
                run_bounded(fuzz_session(proxy.base, mode, [Frame("warm-up", text=audio)]), 30)
            census = proxy.settled([], within_s=3)
            yield Stack(proxy, census["tasks"], proxy.shim_faults())


# ---------------------------------------------------------------------- one example


class SessionBroke(AssertionError):
    pass


async def fuzz_session(
    base: str, mode: str, steps: list[Frame], ending: str = "close"
) -> list[str]:
    """Open a session in ``mode``, send ``steps`` (each followed by a heartbeat that
    must be answered), check the session still takes a valid update, end it; returns
    the error codes seen."""
    codes: list[str] = []
    acks_wanted = 0
    acks = 0
    async with (
        aiohttp.ClientSession() as http,
        http.ws_connect(ws_url(base, model=mode, **native(mode)), max_msg_size=0) as ws,
    ):

        async def recv(where: str) -> dict[str, Any]:
            msg = await ws.receive(timeout=STEP_TIMEOUT_S)
            if msg.type != aiohttp.WSMsgType.TEXT:
                raise SessionBroke(f"socket ended {where}: {msg.type.name} code {ws.close_code}")
            event: dict[str, Any] = json.loads(msg.data)
            if event.get("type") == "error":
                err = event.get("error") or {}
                code = err.get("code")
                assert isinstance(code, str) and code, f"error without a code {where}: {event}"
                assert code != "internal_error", f"proxy fault {where}: {event}"
                codes.append(code)
            return event

        created = await recv("before session.created")
        assert created["type"] == "session.created", created
        assert created["session"]["capabilities"]["proxy"]["mode"] == mode
        for n, step in enumerate(steps):
            where = f"after step {n} {step!r}"
            if step.binary is not None:
                await ws.send_bytes(step.binary)
            else:
                assert step.text is not None
                await ws.send_str(step.text)
            acks_wanted += 1 + step.is_heartbeat
            await ws.send_str(json.dumps({"type": "session.heartbeat", "event_id": f"hb_{n}"}))
            seen: list[str] = []
            while acks < acks_wanted:
                event = await recv(where)
                if event["type"] == "session.heartbeat_ack":
                    acks += 1
                elif event["type"] == "error":
                    seen.append(event["error"]["code"])
            if step.expect == "invalid_event":
                # A native client is refused in vLLM-Omni's words (docs/protocol.md, "Errors").
                said = {"invalid_event", *(("invalid_json", "bad_event") if native(mode) else ())}
                assert said & set(seen), f"no invalid_event {where}: {seen}"
            elif step.expect == "error" or (step.expect == "strict_error" and not native(mode)):
                assert seen, f"no coded error {where}"
        marker, marker_id = f"fuzz ok {len(steps)}", f"evt_marker_{len(steps)}"
        update = {"type": "realtime", "instructions": marker}
        await ws.send_str(
            json.dumps({"type": "session.update", "event_id": marker_id, "session": update})
        )
        # A turn-based upstream refuses instructions, then answers the rest; so does the
        # proxy for a GA client once a duplex upstream has heard audio, where vLLM-Omni
        # refuses a native client's whole update (docs/fidelity.md, row 2b).
        refused = False
        while True:
            event = await recv("waiting for session.updated")
            if event["type"] == "error" and event["error"].get("event_id") == marker_id:
                code = event["error"]["code"]
                refused = code in ("unsupported_by_upstream", "instructions_update_unsupported")
                if code == "instructions_update_unsupported" and native(mode):
                    break
            elif event["type"] == "session.updated":
                told = (event.get("session") or {}).get("instructions")
                # The refused value never shows as applied (the rest of the update does).
                assert not (refused and told == marker), f"refused yet told {marker!r}"
                if refused or told == marker:
                    break
        if ending == "session.close":
            await ws.send_str(json.dumps({"type": "session.close"}))
            while not ws.closed:
                msg = await ws.receive(timeout=STEP_TIMEOUT_S)
                if msg.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED):
                    break
    return codes


def check(stack: Stack, mode: str, steps: list[Frame], ending: str) -> None:
    run_bounded(
        fuzz_session(stack.proxy.base, mode, steps, ending), STEP_TIMEOUT_S * (len(steps) + 3)
    )
    census = stack.proxy.settled(stack.baseline)
    assert census["clean"], f"left behind after the session: {census} (baseline {stack.baseline})"
    assert stack.proxy.shim_faults() == stack.faults_before, "the shim reported a fault"
