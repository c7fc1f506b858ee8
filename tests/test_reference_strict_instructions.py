"""The strict stand-ins fix the instructions once the model has taken in audio, like
vLLM-Omni 0.30.0 (``docs/fidelity.md`` row 2b); the lenient preset lets them change.

Each test runs a real reference backend over a real WebSocket; "nothing happened" is
shown with the sentinel ``Peer.settle`` (``tests/reference_strict_client.py``).
"""

from __future__ import annotations

import pytest

from proxy.reference import ReferenceOptions
from tests.reference_strict_client import SPEECH, answered, backend, session

pytestmark = pytest.mark.timeout(60)


async def test_instructions_change_after_input_is_refused_whole() -> None:
    """``session/control.py`` (``on_session_update``): once an append has been accepted
    (``session/append_task.py`` locks the context; a turn answered hands the model its
    audio) an update whose instructions differ is refused whole with
    ``instructions_update_unsupported``; restating them is not a change, and before any
    input they change freely (what else locks, and what does not:
    ``tests/test_reference_instructions_lock.py``)."""
    async with backend() as (http, url), session(http, url, instructions="a") as (p, _):
        await p.send({"type": "session.update", "session": {"instructions": "b"}})
        assert (await p.until("session.updated"))["session"]["instructions"] == "b"
        await p.speak(SPEECH)
        await p.send({"type": "input_audio_buffer.commit", "response_create": True})
        await answered(p)
        await p.settle()
        await p.send(
            {
                "type": "session.update",
                "event_id": "ev_1",
                "session": {"instructions": "c", "temperature": 0.5},
            }
        )
        error = await p.recv()
        assert error["type"] == "error", error
        assert error["error"] == {
            "type": "invalid_request_error",
            "code": "instructions_update_unsupported",
            "message": "session.update cannot change instructions after the native duplex"
            " context is initialized",
            "event_id": "ev_1",
        }
        for refused in ({"instructions": None}, {"instructions": "c"}):
            await p.send({"type": "session.update", "session": refused})
            assert (await p.recv())["type"] == "error"
        await p.send({"type": "session.update", "session": {"instructions": "b", "speed": 1.5}})
        updated = (await p.until("session.updated"))["session"]
        assert (updated["instructions"], updated["temperature"], updated["speed"]) == (
            "b",
            None,
            1.5,
        )


async def test_lenient_instructions_change_after_input() -> None:
    options = ReferenceOptions(fidelity="lenient")
    async with backend(options) as (http, url), session(http, url, instructions="a") as (p, _):
        await p.speak(SPEECH)
        await p.settle()
        await p.send({"type": "session.update", "session": {"instructions": "c"}})
        assert (await p.until("session.updated"))["session"]["instructions"] == "c"
