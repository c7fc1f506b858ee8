"""What a GA client is told after an append answered only by its audio going on
(``shim/dialects/ga_told.py``, ``_audio_only``): the actions as they came, as the whole
of ``told`` gives them. The same conversation (appends, VAD windows, the upstream's
answers with their items held for GA's order, a cut, commits, a user item, an upstream
lost and resumed) through a relay that takes the short way and one that never does:
every input's actions and every snapshot the same."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

import numpy as np
import orjson
import pytest

from shim.actions import Action, AnalyzeAudio
from shim.audio import b64encode
from shim.dialects import ga_told
from shim.dialects.ga_relay import GaRelaySession
from shim.inputs import (
    ClientEvent,
    Input,
    Tick,
    UpstreamEvent,
    UpstreamLost,
    UpstreamReattached,
    VadWindow,
)
from shim.session import ShimSettings
from shim.vad_gate import VadParams

RATE = 24000


def _relay() -> GaRelaySession:
    settings = ShimSettings(vad=VadParams(), min_barge_in_ms=200, echo_suppression=True)
    caps = {"supports_barge_in": False, "supports_audio_truncate": True}
    s = GaRelaySession("sess_0123456789abcdef", "m", settings, caps)
    s.bind_upstream({"type": "session.created", "session": {"id": "up-1"}, "resume_token": "t"})
    return s


def _append(n: int, loud: bool) -> dict[str, Any]:
    t = (np.arange(480) + 480 * n) / RATE
    wave = np.sin(2 * np.pi * 180 * t) * (6000 if loud else 20)
    pcm = wave.astype("<i2").tobytes()
    ev: dict[str, Any] = {"type": "input_audio_buffer.append", "audio": b64encode(pcm)}
    if n % 17 == 0:
        ev["event_id"] = f"evt_{n}"
    return ev


def _answer(rid: str, step: int) -> list[dict[str, Any]]:
    """The upstream's answer ``rid``, ``step`` appends after it began."""
    item = {"id": f"item_{rid}", "type": "message", "role": "assistant"}
    if step == 0:
        return [
            {"type": "response.created", "response": {"id": rid, "status": "in_progress"}},
            {"type": "conversation.item.added", "item": {**item, "status": "in_progress"}},
        ]
    if step == 2:
        return [
            {
                "type": "response.output_item.added",
                "response_id": rid,
                "output_index": 0,
                "item": {**item, "status": "in_progress"},
            }
        ]
    if 2 < step < 40:
        delta = b64encode(np.full(480, 300, dtype="<i2").tobytes())
        ev = {"type": "response.output_audio.delta", "response_id": rid, "item_id": item["id"]}
        return [{**ev, "output_index": 0, "content_index": 0, "delta": delta}]
    if step == 40:
        return [{"type": "response.done", "response": {"id": rid, "status": "completed"}}]
    return []


def _conversation() -> list[Input]:
    inputs: list[Input] = []
    seq, vad_end, now, rid = 10, 0, 0.0, None
    for n in range(1200):
        now += 20.0
        phase = n % 300
        if phase == 150:
            rid = f"resp-{n}"
        if rid is not None:
            for ev in _answer(rid, phase - 150):
                seq += 1
                inputs.append(UpstreamEvent({**ev, "server_event_seq": seq}, "", now))
        if n == 700:  # lost mid-answer, not resumed: a fresh upstream session
            inputs.append(UpstreamLost("closed", now, resume=False))
        if n == 702:
            fresh = {"type": "session.created", "session": {"id": "up-2"}, "resume_token": "u"}
            inputs.append(UpstreamReattached(fresh, now))
        client: dict[str, Any] = _append(n, loud=phase < 100 or 170 < phase < 200)
        if phase == 120:
            client = {"type": "input_audio_buffer.commit"}
        elif phase == 260:
            item = {"type": "message", "role": "user", "content": [{"type": "input_text"}]}
            client = {"type": "conversation.item.create", "item": item}
        inputs.append(ClientEvent(client, orjson.dumps(client).decode(), now))
        if n % 3 == 0:
            vad_end += 1024
            for k in (512, 0):
                prob = 0.9 if phase < 100 or 170 < phase < 200 else 0.05
                inputs.append(VadWindow(prob, vad_end - k, now))
        if n % 5 == 0:
            inputs.append(Tick(now))
    return inputs


def _plain(action: Action) -> tuple[Any, ...]:
    """An action as comparable values (its arrays as bytes)."""
    values = [getattr(action, f.name) for f in fields(action)]  # type: ignore[arg-type]
    return (type(action).__name__, *[v.tobytes() if hasattr(v, "tobytes") else v for v in values])


def _replay(monkeypatch: pytest.MonkeyPatch, short_way: bool) -> list[Any]:
    if not short_way:
        monkeypatch.setattr(ga_told, "_audio_only", lambda inp, actions: False)
    s = _relay()
    seen: list[Any] = []
    for i, inp in enumerate(_conversation()):
        out: list[Action] = s.handle(inp)
        seen.append([_plain(a) for a in out])
        if i % 25 == 0:
            seen.append(orjson.dumps(s.snapshot()))
    monkeypatch.undo()
    return seen


def test_appends_are_told_as_the_whole_of_told_tells_them(monkeypatch: pytest.MonkeyPatch) -> None:
    taken = [0]
    real = ga_told._audio_only

    def counted(inp: Input, actions: list[Action]) -> bool:
        short = real(inp, actions)
        taken[0] += short
        return short

    monkeypatch.setattr(ga_told, "_audio_only", counted)
    short = _replay(monkeypatch, short_way=True)
    assert taken[0] > 500, "the conversation hardly took the short way"
    assert short == _replay(monkeypatch, short_way=False)


def test_only_an_append_with_its_own_audio_takes_the_short_way() -> None:
    append = {"type": "input_audio_buffer.append", "audio": "AAAA"}
    commit = {"type": "input_audio_buffer.commit"}
    from shim.actions import AbortUpstream, SendClient, SendUpstream

    audio = AnalyzeAudio(samples=np.zeros(4, np.float32), start_sample=0)
    inp = ClientEvent(append, "", 0.0)
    assert ga_told._audio_only(inp, [SendUpstream(append), audio])
    assert ga_told._audio_only(inp, [])
    assert not ga_told._audio_only(ClientEvent(commit, "", 0.0), [SendUpstream(commit)])
    assert not ga_told._audio_only(inp, [SendUpstream(commit)])
    assert not ga_told._audio_only(inp, [SendClient({"type": "error"})])
    assert not ga_told._audio_only(inp, [AbortUpstream(reason="x")])
    assert not ga_told._audio_only(UpstreamEvent(append, "", 0.0), [SendUpstream(append)])
