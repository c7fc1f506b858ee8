"""A GA client's ``voice`` goes up to a duplex upstream only when it changes
(``shim/dialects/ga_voice.py``): vLLM-Omni 0.30.0 refuses a whole ``session.update``
naming any voice once it has output audio (``engine/duplex/config.py``,
``apply_realtime_update``), and GA clients such as the Agents SDK restate theirs in
every update. A real change after the model has spoken is refused to the client, and
the rest of the update applies."""

from __future__ import annotations

from shim.inputs import UpstreamLost
from tests.shim_ga_relay_script import RID, answer, answer_delta, make
from tests.shim_ga_resumable import ga
from tests.shim_ga_voice_updates import changed_voice, update, voiced
from tests.shim_script import upstream_events


def test_an_unchanged_voice_is_not_restated_after_the_model_has_spoken() -> None:
    sc = make()
    sent, _ = update(sc, voiced("ash"))  # before any audio: the upstream takes it
    assert sent["audio"]["output"]["voice"] == "ash"
    answer(sc)  # a turn taken: the instructions are fixed too (ga_instructions.py)
    sent, told = update(sc, voiced("ash", tools=[]))
    assert sent["tools"] == []
    assert "voice" not in sent.get("audio", {}).get("output", {}) and "voice" not in sent
    assert [e["type"] for e in told] == ["session.updated"]


def test_a_changed_voice_after_audio_is_refused_and_the_rest_applies() -> None:
    sc = make()
    update(sc, voiced("ash"))
    answer(sc)
    sent, told = update(sc, {"audio": {"output": {"voice": "verse", "speed": 1.2}}})
    assert sent["audio"]["output"]["speed"] == 1.2
    assert "voice" not in sent.get("audio", {}).get("output", {})
    error, updated = told
    assert error["error"]["code"] == "voice_update_after_audio_unsupported"
    assert error["error"]["param"] == "session.audio.output.voice"
    assert error["error"]["event_id"] == "evt_v"
    assert updated["type"] == "session.updated"
    # A fresh upstream after a loss is given the voice the session kept, not the refused one.
    out = sc.s.handle(UpstreamLost("resume refused", sc.now, resume=False))
    [restore] = upstream_events(out)
    assert restore["session"]["audio"]["output"]["voice"] == "ash"
    assert restore["session"]["audio"]["output"]["speed"] == 1.2


def test_before_any_audio_a_voice_may_change() -> None:
    sc = make()
    update(sc, voiced("ash"))
    sent, told = update(sc, voiced("verse"))
    assert sent["audio"]["output"]["voice"] == "verse"
    assert [e["type"] for e in told] == ["session.updated"]


# vLLM-Omni refuses a voice while its current response's playback has audio
# (``engine/duplex/session/control.py``: ``audio_started`` is ``session.playback``'s
# ``generated_ms`` or ``sent_ms``), and that playback is a fresh one for each response
# it begins (``engine/duplex/session/engine_session.py``, ``begin_response``) and after
# a cut or clear (``clear_playback_cursor``), and a fresh upstream session has none.


def test_a_fresh_upstream_session_takes_a_new_voice() -> None:
    sc = make()
    update(sc, voiced("ash"))
    answer(sc)
    sc.s.handle(UpstreamLost("resume refused", sc.now, resume=False))
    ga(sc).bind_upstream({"type": "session.created", "session": {"id": "up-2"}})
    assert changed_voice(sc, "verse")


def test_a_new_response_takes_a_voice_until_its_first_audio() -> None:
    sc = make()
    update(sc, voiced("ash"))
    answer(sc)
    sc.upstream({"type": "response.done", "response": {"id": RID, "status": "completed"}})
    assert not changed_voice(sc, "verse")  # the finished answer's playback has audio
    sc.upstream({"type": "response.created", "response": {"id": "resp_2"}})
    assert changed_voice(sc, "verse")
    sc.upstream({**answer_delta(sample_rate_hz=24000), "response_id": "resp_2"})
    assert not changed_voice(sc, "sage")


def test_a_voice_may_change_once_the_answer_is_cancelled() -> None:
    sc = make()
    update(sc, voiced("ash"))
    answer(sc)  # live, with audio
    assert not changed_voice(sc, "verse")
    sc.client({"type": "response.cancel"})
    assert changed_voice(sc, "verse")
