"""A native client's fresh upstream session gets what the lost one opened with.

The client's first ``session.update`` opens the upstream session itself (over the
route's ``session_defaults``: ``proxy/upstream_opening.py``) and is only applied
locally after (``proxy/handshake/client_session.py``). The relay's kept update starts
from that opening (``relay_kept_update.KeptSettings.opened_with``), so a fresh upstream
after a loss (given the fold as an update) or a move (opened with it:
``shim/snapshot.py``, ``opening_session``) keeps the client's voice, turn detection and
``extra_body.auto_response`` (without it Nemotron answers nothing).
"""

from __future__ import annotations

from typing import Any

import pytest

from proxy.emulated.runner import EmulatedRunner
from proxy.reference import ReferenceOptions
from shim import snapshot
from shim.actions import AbortUpstream
from shim.dialects.duplex_relay import BargeInRelaySession
from shim.inputs import UpstreamLost
from tests.duplex_relay_script import make
from tests.native_client_session import NATIVE, opening
from tests.relay_kept_updates import OPENED, updated
from tests.servers import connect, proxy_config, proxy_with_state, reference, ws_url
from tests.shim_script import upstream_events

pytestmark = pytest.mark.timeout(60)


def test_a_move_reopens_with_what_the_upstream_opened_with() -> None:
    sc = make()
    sc.s.opened_with(OPENED)
    updated(sc, {"instructions": "Be kind."})
    session = snapshot.opening_session(sc.s.snapshot()) or {}
    assert session["voice"] == "alloy", session
    assert session["extra_body"] == {"auto_response": True}, session
    assert session["turn_detection"] == {"type": "server_vad"}, session
    assert session["instructions"] == "Be kind."
    # the opening read extra_body's number last: the fold states it flat
    assert session["overlap_silence_rms"] == 0.02


def test_a_loss_gives_the_fresh_upstream_what_the_lost_one_opened_with() -> None:
    sc = make()
    sc.s.opened_with(OPENED)
    out = sc.s.handle(UpstreamLost("resume refused", sc.now, resume=False))
    [sent] = [e["session"] for e in upstream_events(out) if e["type"] == "session.update"]
    assert sent["voice"] == "alloy" and sent["extra_body"] == {"auto_response": True}, sent
    assert "model" not in sent, "open-only: the fresh upstream opened with it"


def test_a_loss_opens_the_fresh_upstream_with_the_settings_it_then_gives() -> None:
    """MiniCPM-o and Nemotron refuse any live change of the instructions a session
    opened with (their plugins' ``runtime_config_for_update``), and vLLM-Omni refuses
    such an update whole: the fresh upstream opens with the client's settings, so the
    update after changes none of them (it was dialled with the route's alone)."""
    sc = make()
    sc.s.opened_with(OPENED)
    updated(sc, {"instructions": "Be kind."})
    out = sc.s.handle(UpstreamLost("resume refused", sc.now, resume=False))
    [abort] = [a for a in out if isinstance(a, AbortUpstream)]
    opening = abort.opening or {}
    [sent] = [e["session"] for e in upstream_events(out) if e["type"] == "session.update"]
    assert opening["instructions"] == sent["instructions"] == "Be kind.", (opening, sent)
    assert opening["voice"] == "alloy" and opening["extra_body"] == {"auto_response": True}
    assert "model" not in opening and "type" not in opening, opening


async def test_a_native_clients_opening_is_kept_through_the_proxy() -> None:
    options = ReferenceOptions(fidelity="strict")
    async with (
        reference("duplex-no-barge-in", options=options) as upstream,
        proxy_with_state(_config(upstream)) as (base, state),
        connect(ws_url(base, **NATIVE)) as c,
    ):
        await c.send(opening(instructions="Be brief."))
        await c.until("session.created")
        [runner] = state.live.values()
        assert isinstance(runner, EmulatedRunner)
        shim = runner.shim
        assert isinstance(shim, BargeInRelaySession)
        kept = shim.kept_update()
        assert kept is not None, "the opening is kept"
        session: dict[str, Any] = kept["session"]
        assert session["instructions"] == "Be brief."
        assert session["extra_body"] == {"auto_response": True, "a": 1}, session
        assert session["temperature"] == 0.5, "the route's defaults, as the upstream opened"


def _config(upstream: str) -> Any:
    route = {
        "model": "m",
        "upstream": upstream,
        "session_defaults": {"temperature": 0.5, "extra_body": {"a": 1}},
    }
    return proxy_config({}, routes=[route])
