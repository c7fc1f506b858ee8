"""The session a GA client's connection opens the upstream with (``shim/ga_upstream.py``):
its server VAD from the operator's ``[vad]`` section, as the proxy's own VAD starts, in
what vLLM-Omni reads. When the client spoke first with an update the proxy refuses, it
changes nothing: the upstream opens as the proxy's session stands (server VAD)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from shim.dialects.ga_relay import GaRelaySession
from shim.ga_upstream import opening_session
from shim.native_turns import turn_refusal
from shim.session import ShimSettings
from shim.vad_gate import VadParams
from tests.shim_ga_relay_script import SERVER_VAD
from tests.shim_script import Script, upstream_events


@pytest.mark.parametrize(
    "refused",
    [
        {"type": "transcription", "audio": {"input": {"turn_detection": None}}},
        {"output_modalities": ["text"], "audio": {"input": {"turn_detection": None}}},
    ],
)
def test_a_refused_opening_update_opens_the_upstream_with_the_ga_defaults(
    refused: dict[str, Any],
) -> None:
    opening = opening_session(refused)
    assert opening == opening_session(None)
    assert opening["turn_detection"] == SERVER_VAD


# An operator's [vad] section (tests/test_vad_config.py), as the proxy's sessions get it.
CONFIGURED = VadParams(
    threshold=0.6, prefix_padding_ms=200, silence_duration_ms=700, min_speech_ms=120
)
STATED = {
    "type": "server_vad",
    "threshold": 0.6,
    "prefix_padding_ms": 200,
    "silence_duration_ms": 700,
    "min_speech_duration_ms": 120,
}


def test_the_upstreams_vad_opens_from_the_configured_section() -> None:
    opening = opening_session(None, None, CONFIGURED)
    assert opening["turn_detection"] == STATED
    assert turn_refusal({"session": opening}) is None, "vLLM-Omni reads every field"
    # The client's opening update over it: what it names, the rest as configured.
    td = {"type": "server_vad", "threshold": 0.7, "create_response": False}
    own = opening_session({"audio": {"input": {"turn_detection": td}}}, None, CONFIGURED)
    assert own["turn_detection"] == {**STATED, "threshold": 0.7, "create_response": False}


def test_the_relays_own_statement_of_the_session_starts_from_the_section_too() -> None:
    """What a fresh upstream session gets after a loss (``ga_session_update.py``)."""
    settings = ShimSettings(vad=CONFIGURED, echo_suppression=False)
    relay = GaRelaySession("sess_0123456789abcdef", "m", settings, {"supports_barge_in": True})
    assert relay.last_update is not None
    assert relay.last_update["session"]["turn_detection"] == STATED


@pytest.mark.parametrize("threshold", [0.15, 0.1, 0.01])
def test_a_threshold_vllm_omni_refuses_goes_up_as_the_nearest_it_takes(threshold: float) -> None:
    """vLLM-Omni 0.30.0 refuses a threshold at or below Silero's floor, 0.15
    (engine/duplex/turn_detection.py ``validate_realtime_turn_detection``), and puts its
    own 0.5 in place of one left out: the upstream's VAD would commit turns far less
    readily than the proxy's, which runs at the client's. 0.16 goes up instead."""
    assert turn_refusal({"turn_detection": {"type": "server_vad", "threshold": threshold}})
    low = replace(CONFIGURED, threshold=threshold)
    opening = opening_session(None, None, low)
    assert opening["turn_detection"]["threshold"] == 0.16, opening
    assert turn_refusal({"session": opening}) is None
    td = {"type": "server_vad", "threshold": threshold}
    update = opening_session({"turn_detection": td}, None, CONFIGURED)
    assert update["turn_detection"]["threshold"] == 0.16, update
    # And a later update, as the relay sends it.
    settings = ShimSettings(vad=CONFIGURED, echo_suppression=False)
    relay = GaRelaySession("sess_0123456789abcdef", "m", settings, {"supports_barge_in": True})
    relay.bind_upstream({"type": "session.created", "session": {"id": "up-1"}})
    sc = Script(relay)
    later = {"type": "realtime", "audio": {"input": {"turn_detection": td}}}
    [sent] = upstream_events(sc.client({"type": "session.update", "session": later}))
    assert sent["session"]["turn_detection"]["threshold"] == 0.16, sent
    assert turn_refusal(sent) is None
    assert relay.config.turn.vad is not None and relay.config.turn.vad.threshold == threshold
