"""``min_speech_duration_ms`` in a ``session.update``, both emulated sessions: kept through
``snapshot()``/``restore()``, and refused when negative, fractional or a string.
Regressions the properties of tests/test_props_session_update.py found (kept until
the shim is fixed).
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from tests.session_update_props import MAKERS, errors, make_turn, send

MIN_SPEECH_UPDATE = {
    "type": "session.update",
    "session": {
        "audio": {
            "input": {"turn_detection": {"type": "server_vad", "min_speech_duration_ms": 400}}
        }
    },
}


@pytest.mark.parametrize("dialect", sorted(MAKERS))
def test_min_speech_duration_survives_snapshot_and_restore(dialect: str) -> None:
    session = MAKERS[dialect]()
    assert not errors(send(session, MIN_SPEECH_UPDATE))
    assert session.config.turn.vad is not None
    assert session.config.turn.vad.min_speech_ms == 400
    moved = MAKERS[dialect]()
    moved.restore(orjson.loads(orjson.dumps(session.snapshot())))
    assert moved.config.turn == session.config.turn


@pytest.mark.parametrize("value", [-5, 400.5, "400"])
def test_an_invalid_min_speech_duration_is_refused(value: Any) -> None:
    session = make_turn()
    before = session.config
    event = {
        "type": "session.update",
        "session": {"turn_detection": {"type": "server_vad", "min_speech_duration_ms": value}},
    }
    (err,) = errors(send(session, event))
    assert err["code"] == "invalid_value"
    assert session.config == before
