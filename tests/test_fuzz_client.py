"""Fuzzing the client side: every client event type, valid and broken, in every mode.

Through real WebSockets, against the proxy in each mode over its reference backend
(passthrough over ``duplex``, barge_in_emulated over ``duplex-no-barge-in``,
duplex_emulated over ``turn``). Each hypothesis example opens a session, sends a few
frames drawn from: valid events of every type, the same with a field replaced by any
JSON value or dropped, a wrong ``type``, an unknown type, truncated JSON, huge events,
deeply nested JSON (deeper than ``max_json_depth``: ``invalid_event``), binary frames,
bad base64 audio. After every frame a ``session.heartbeat`` must be answered, and at the
end a valid ``session.update``; then the session is closed and the proxy must hold
nothing of it any more (no client session, no live session, the ``sessions_active``
gauge at zero, no task left on its loop). What docs/protocol.md says each kind of bad
frame gets is checked: a frame that is not a JSON object with a string ``type`` (or a
binary frame) gets ``invalid_event``; an unknown type gets a coded error; bad base64
audio gets a coded error; every error carries a code and none is ``internal_error`` (the
proxy's own fault).

Bounded: ``tests/fuzz_servers.py`` picks a derandomized profile of a few dozen examples
per mode; ``HYPOTHESIS_HUNT=1`` explores many more, at random.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.fuzz_client_frames import Frame, frames, text_frame
from tests.fuzz_client_session import MODES, Stack, open_stack

# Imported as ``_check`` so that the fuzz test's source, and so hypothesis's
# derandomized examples (seeded from it), stay those the test has always run.
from tests.fuzz_client_session import check as _check
from tests.fuzz_servers import fuzz_settings, fuzz_timeout


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    with open_stack() as opened:
        yield opened


@pytest.mark.parametrize("mode", list(MODES))
@fuzz_timeout
@fuzz_settings(max_examples=30)
@given(
    steps=st.lists(frames, min_size=1, max_size=4),
    ending=st.sampled_from(["close", "session.close"]),
)
def test_fuzzed_client_events_get_coded_answers_and_leave_nothing_behind(
    stack: Stack, mode: str, steps: list[Frame], ending: str
) -> None:
    _check(stack, mode, steps, ending)


DEEP = "[" * 300 + "]" * 300


def test_a_playback_ack_nested_300_deep_is_refused_and_the_relay_session_goes_on(
    stack: Stack,
) -> None:
    text = json.dumps({"type": "playback.ack", "item_id": "item_x", "played_ms": 100, "x": "@"})
    frame = text_frame(
        "playback.ack nested 300 deep", text.replace('"@"', DEEP), expect="invalid_event"
    )
    _check(stack, "barge_in_emulated", [frame], "close")
