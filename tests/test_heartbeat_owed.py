"""A heartbeat forwarded into an upstream socket that drops just then is answered.

The upstream answers a client's ``session.heartbeat``; one forwarded as its socket
goes (the proxy has not read the close yet) never is. Once the loss is handled (a
resume or a redial begins), the proxy answers it itself, as it answers the
heartbeats that come while it redials (``proxy/emulated/actions_run.py``). Found by
``tests/test_fuzz_upstream.py`` (an upstream that aborts after its script).
"""

from __future__ import annotations

import asyncio
from typing import Any

from proxy.emulated.actions_run import ActionRunner
from shim.actions import AbortUpstream, ForwardUpstream, ResumeUpstream, SendClient

HEARTBEAT = '{"type": "session.heartbeat"}'


class Out:
    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def send(self, event: dict[str, Any]) -> None:
        self.sent.append(event)


class Upstream:
    """The upstream side as the runner uses it: frames sent, redialing after a loss."""

    def __init__(self) -> None:
        self.frames: list[str] = []
        self.redialing = False

    async def send(self, text: str) -> None:
        self.frames.append(text)

    async def reattach(self, action: object) -> None:
        self.redialing = True

    async def redial(self, action: object) -> None:
        self.redialing = True

    def settle(self) -> None:
        pass


def runner() -> tuple[ActionRunner, Out, Upstream]:
    out, up = Out(), Upstream()
    run = ActionRunner("sess_1", out, up, None, asyncio.Queue(), None, None, None)  # type: ignore[arg-type]
    return run, out, up


def acks(out: Out) -> int:
    return sum(e.get("type") == "session.heartbeat_ack" for e in out.sent)


def test_a_heartbeat_the_lost_upstream_never_answered_is_answered_by_the_proxy() -> None:
    for loss in (ResumeUpstream("s", "t", 3), AbortUpstream("lost", after_loss=True)):
        run, out, up = runner()
        asyncio.run(run.run([ForwardUpstream(HEARTBEAT)]))
        assert up.frames == [HEARTBEAT] and acks(out) == 0
        asyncio.run(run.run([loss]))
        assert acks(out) == 1, (loss, out.sent)
        # While it redials, each heartbeat is answered at once, and none twice.
        asyncio.run(run.run([ForwardUpstream(HEARTBEAT)]))
        assert acks(out) == 2 and up.frames == [HEARTBEAT]


def test_a_heartbeat_the_upstream_answered_is_not_answered_again() -> None:
    run, out, _ = runner()
    ack = {"type": "session.heartbeat_ack", "session_id": "up"}
    asyncio.run(run.run([ForwardUpstream(HEARTBEAT), SendClient(ack)]))
    asyncio.run(run.run([ResumeUpstream("s", "t", 3)]))
    assert acks(out) == 1, out.sent
