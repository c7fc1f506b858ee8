"""The one update a fresh upstream of the barge-in relay is given, read by vLLM-Omni
0.30.0's own code from the wheel: its reader finds the formats and rates the client's
updates did, one after the other, and its ``apply_realtime_update`` has the same
session after it as after the updates the lost upstream got.
"""

from __future__ import annotations

import types as modules
from typing import Any

import pytest

from tests.duplex_relay_script import make
from tests.relay_kept_updates import BARGE_IN, SEQUENCES, lost, updated
from tests.wheel_duplex_config import Wheel, read_by_wheel, wheel_config
from tests.wheel_realtime_session import wheel_session
from tests.wheel_turn_detection import wheel_turns

__all__ = ["wheel_config", "wheel_session", "wheel_turns"]


@pytest.mark.parametrize(
    "updates",
    [
        [
            {"input_audio_format": "g711_ulaw", "sample_rate_hz": 8000},
            {"audio": {"input": {"format": {"type": "audio/pcm", "rate": 24000}}}},
        ],
        [{"sample_rate_hz": 24000}, {"input_audio_format": "pcm16"}, {"instructions": "x"}],
        [
            {"audio": {"input": {"format": {"type": "audio/pcm", "rate": 24000}}}},
            {"audio": {"input": {"sample_rate_hz": 16000}}},
        ],
        [
            {"audio": {"output": {"format": {"type": "audio/g711_alaw"}}}},
            {"audio": {"output": {"format": {"type": "audio/pcm", "rate": 16000}}}},
            {"instructions": "x"},
        ],
        *[[*each] for each in SEQUENCES],
    ],
)
def test_the_given_formats_read_as_the_updates_did(
    wheel_session: modules.ModuleType, updates: list[dict[str, Any]]
) -> None:
    """Read by vLLM-Omni's own reader, the one update a fresh upstream gets declares
    the formats and rates the updates, one after the other, did."""
    sc = make()
    updated(sc, *updates)
    stepwise = wheel_session.RealtimeInputDefaults()
    for each in updates:
        stepwise = stepwise.with_session_payload(each)
    once = wheel_session.RealtimeInputDefaults().with_session_payload(lost(sc))
    assert once == stepwise


@pytest.mark.parametrize("updates", SEQUENCES)
def test_the_given_update_reads_as_the_updates_did(
    wheel_config: Wheel, wheel_turns: modules.ModuleType, updates: tuple[dict[str, Any], ...]
) -> None:
    """vLLM-Omni's ``apply_realtime_update`` has the same session after the one update
    a fresh upstream gets as after the updates the lost one got, one by one: a setting
    spelled several ways is replaced whole by a later update naming it any way, and a
    value it ignores (``extra_body: null``, ``audio: null``) leaves the earlier one."""
    sc = make()
    sent = updated(sc, *updates)
    assert read_by_wheel(wheel_config, wheel_turns, lost(sc)) == read_by_wheel(
        wheel_config, wheel_turns, *sent
    )


def test_a_later_flat_policy_replaces_one_given_in_extra_body(
    wheel_config: Wheel, wheel_turns: modules.ModuleType
) -> None:
    """``extra_body.overlap_policy`` then a flat one: the fresh upstream runs the flat
    one, as the lost one did (a stale ``extra_body`` copy would win over it)."""
    sc = make()
    updated(sc, {"extra_body": {"overlap_policy": BARGE_IN}}, {"overlap_policy": "listen_only"})
    session = lost(sc)
    assert read_by_wheel(wheel_config, wheel_turns, session)["overlap_policy"] == "listen_only"
    assert session.get("extra_body", {}).get("overlap_policy") in (None, "listen_only")
