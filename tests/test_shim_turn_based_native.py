"""duplex_emulated by script, native clients (vLLM-Omni's protocol): commits answered under
auto_response or on response.create, over an answer in progress, with or without
``final``; appends at their own sample rate; auto_response kept across a move."""

from __future__ import annotations

import pybase64
import pytest

from shim.actions import AbortUpstream
from tests.shim_script import client_events, types, upstream_events
from tests.turn_based_script import NATIVE_OPEN, make, native, native_append, respond


def test_a_native_commit_is_answered_under_auto_response() -> None:
    sc = native()
    sc.client(native_append(800))
    out = sc.client({"type": "input_audio_buffer.commit", "final": True})
    t = types(out)
    assert t[:3] == [
        "input_audio_buffer.committed",
        "conversation.item.added",
        "conversation.item.done",
    ]
    assert "response.created" in t
    sent = upstream_events(out)
    assert sent[-1] == {"type": "input_audio_buffer.commit", "final": True}
    audio = b"".join(pybase64.b64decode(e["audio"]) for e in sent if "audio" in e)
    assert len(audio) // 2 == pytest.approx(16000 * 0.8, abs=160), "800 ms at 16 kHz"


@pytest.mark.parametrize(
    ("auto", "asked", "answered"), [(True, False, True), (False, True, True), (False, False, False)]
)
def test_a_commit_says_itself_whether_it_wants_an_answer(
    auto: bool, asked: bool, answered: bool
) -> None:
    sc = make()
    sc.client(
        {
            **NATIVE_OPEN,
            "session": {**NATIVE_OPEN["session"], "extra_body": {"auto_response": auto}},
        }
    )
    sc.client(native_append(500))
    out = sc.client({"type": "input_audio_buffer.commit", "final": True, "response_create": asked})
    assert ("response.created" in types(out)) is answered


def test_without_auto_response_a_commit_waits_for_response_create() -> None:
    sc = make()
    sc.client({"type": "session.update", "session": {"turn_detection": None}})
    sc.client(native_append(500))
    assert "response.created" not in types(sc.client({"type": "input_audio_buffer.commit"}))
    assert types(sc.client({"type": "response.create"}))[0] == "response.created"


def test_a_native_commit_over_an_answer_in_progress_is_answered_after_it() -> None:
    sc = native()
    sc.client(native_append(500))
    sc.client({"type": "input_audio_buffer.commit", "final": True})
    respond(sc, chunks=2)
    sc.client(native_append(500))
    out = sc.client({"type": "input_audio_buffer.commit", "final": True})
    t = types(out)
    assert "input_audio_buffer.committed" in t
    assert "response.done" not in t and "response.created" not in t, "the answer goes on"
    assert not any(isinstance(a, AbortUpstream) for a in out)
    done = sc.upstream({"type": "response.output_audio.done", "has_audio": True})
    t = types(done)
    assert t.index("response.done") < t.index("response.created"), "then the next answer"
    first = next(e for e in client_events(done) if e["type"] == "response.done")
    assert first["response"]["status"] == "completed"


def test_an_append_is_read_at_its_own_sample_rate() -> None:
    sc = make()  # the session says 24 kHz (the GA default); the appends say otherwise
    sc.client({"type": "session.update", "session": {"turn_detection": None}})
    sc.client(native_append(500, rate=16000))
    sc.client(native_append(500, rate=8000))
    sc.client(native_append(500, rate=8000))
    # 1.5 s on the 16 kHz timeline, less what the 8 kHz resampler still holds.
    assert sc.s.history.end_ms == pytest.approx(1500, abs=80)
    bad = sc.client({**native_append(20), "sample_rate_hz": 12.5})
    assert client_events(bad)[0]["error"]["code"] == "invalid_value"
    bad = sc.client({**native_append(20), "format": "pcmu"})
    assert client_events(bad)[0]["error"]["code"] == "unsupported_audio_format"


def test_auto_response_moves_with_the_session() -> None:
    sc = native()
    moved = make()
    moved.s.restore(sc.s.snapshot())
    moved.client({"type": "session.update", "session": {"turn_detection": None}})
    moved.client(native_append(500, rate=24000))
    out = moved.client({"type": "input_audio_buffer.commit", "final": True})
    assert "response.created" in types(out)


@pytest.mark.parametrize("auto", [True, False])
def test_a_non_final_commit_is_a_commit_like_any_other(auto: bool) -> None:
    """vLLM-Omni 0.30.0 reads ``final`` into the commit and then submits the turn
    whatever it says: ``final: false`` commits and answers exactly as ``final: true``."""
    seen = {}
    for final in (True, False):
        sc = make()
        sc.client(
            {
                **NATIVE_OPEN,
                "session": {**NATIVE_OPEN["session"], "extra_body": {"auto_response": auto}},
            }
        )
        sc.client(native_append(500))
        out = sc.client({"type": "input_audio_buffer.commit", "final": final})
        sent = upstream_events(out)
        seen[final] = (types(out), [e for e in sent if e["type"] != "input_audio_buffer.append"])
    assert seen[False] == seen[True]
    assert seen[False][0][0] == "input_audio_buffer.committed"
    assert ("response.created" in seen[False][0]) is auto
