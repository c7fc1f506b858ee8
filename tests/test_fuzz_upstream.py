"""Fuzzing the upstream side: a misbehaving upstream in each dialect, through the proxy.

``tests/fuzz_upstream.py`` plays the duplex dialect with and without barge-in (the
proxy in passthrough and barge_in_emulated) and the turn-based dialect
(duplex_emulated). After a valid opening it sends what hypothesis draws: bad JSON,
wrong types, missing fields, huge or undecodable audio deltas, events before or
without their response, duplicated ``response.done``, ``server_event_seq`` gaps and
repeats, a second ``session.created``, binary frames, deeply nested JSON; then it
stays, closes, or aborts the TCP connection. Broken openings (an event or garbage
before ``session.created``, a close, silence) are drawn too.

What must hold (docs/protocol.md): a broken opening gets ``upstream_unavailable`` and
close 1011; after a valid opening the session is either still answering (a heartbeat,
a valid ``session.update``, and over the turn-based dialect a complete next turn) or
was ended with a coded error first. Never ``internal_error``, never a shim fault, every
step bounded in time (a hang fails), nothing left on the proxy's loop after the
session, and a new session on the same route works afterwards.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.fuzz_servers import fuzz_settings, fuzz_timeout
from tests.fuzz_upstream_client import MODES
from tests.fuzz_upstream_script import Script
from tests.fuzz_upstream_stack import Stack, check_script, stack
from tests.fuzz_upstream_strategies import scripts

__all__ = ["stack"]  # fixtures, used by name


@pytest.mark.parametrize("mode", list(MODES))
@fuzz_timeout
@fuzz_settings(max_examples=25)
@given(data=st.data())
def test_a_misbehaving_upstream_is_reported_or_recovered_never_a_crash_or_a_hang(
    stack: Stack, mode: str, data: st.DataObject
) -> None:
    script = data.draw(scripts(MODES[mode]), label="script")
    check_script(stack, mode, script)


@pytest.mark.parametrize("mode", list(MODES))
def test_an_upstream_that_never_opens_gets_upstream_unavailable(stack: Stack, mode: str) -> None:
    check_script(stack, mode, Script(opening="silent"))


@pytest.mark.parametrize("mode", ["barge_in_emulated", "duplex_emulated"])
def test_an_upstream_restart_of_1_5_s_is_survived(stack: Stack, mode: str) -> None:
    check_script(stack, mode, Script("valid", (), "abort", down_s=1.5))
