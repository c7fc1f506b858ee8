"""barge_in_emulated (the relay): what the upstream sends and is given, by script through
``handle``: its position, items remembered for a fresh upstream session, session events
and odd audio in the stream, rates, speech events, ticks, and a restored relay's report."""

from __future__ import annotations

from shim.actions import SendClient, SendUpstream
from shim.dialects.duplex_relay import BargeInRelaySession
from shim.inputs import Tick, UpstreamLost, UpstreamReattached
from shim.session import ShimSettings
from tests.shim_edge_scripts import RID, SID, cut, errors, relay, relay_done, relay_respond, the
from tests.shim_script import client_events, pcm_b64, types, upstream_events


def test_an_unbound_relay_has_no_upstream_position() -> None:
    settings = ShimSettings()
    session = BargeInRelaySession(SID, "demo", settings, None)
    assert session.upstream_position() is None
    assert session.snapshot()["upstream"] is None


def test_finished_items_are_remembered_and_given_to_a_fresh_upstream_session() -> None:
    sc = relay()
    items = [
        {"id": "u1", "role": "user", "content": [{"type": "input_text", "text": "hello"}]},
        {
            "id": "a1",
            "role": "assistant",
            "content": [{"type": "output_audio", "transcript": "hi"}],
        },
        {"id": "x1", "role": "tool", "content": [{"text": "ignored"}]},
        {"id": "e1", "role": "user", "content": [{"type": "input_audio"}, "odd"]},
    ]
    for item in items:
        sc.up({"type": "conversation.item.done", "item": item})
    sc.s.handle(UpstreamLost("gone", sc.now, resume=False))
    fresh = {"type": "session.created", "session": {"id": "up-2"}}
    out = sc.s.handle(UpstreamReattached(fresh, sc.now))
    given = [e["item"] for e in upstream_events(out)]
    assert [(i["id"], i["role"], i["content"][0]["text"]) for i in given] == [
        ("u1", "user", "hello"),
        ("a1", "assistant", "hi"),
    ]
    sc.seq = 0  # the fresh upstream session numbers its events afresh
    # Their echoes from the fresh upstream are the talk so far: the client has them.
    assert not sc.up({"type": "conversation.item.added", "item": given[0]})
    assert not sc.up({"type": "conversation.item.done", "item": given[0]})
    again = sc.up({"type": "conversation.item.added", "item": given[0]})
    assert types(again) == ["conversation.item.added"]


def test_upstream_session_events_in_the_stream_rebind_and_unknown_audio_passes() -> None:
    sc = relay()
    sc.upstream({"type": "session.created", "session": {"id": "up-9"}, "resume_token": "t9"})
    assert sc.s.upstream_position() == ("up-9", 0)
    odd = {"type": "response.output_audio.delta", "delta": 5}
    assert client_events(sc.upstream(odd)) == [odd], "not audio it can read: relayed as is"
    loose = {"type": "response.output_audio.delta", "delta": pcm_b64(100, 24000)}
    assert client_events(sc.upstream(loose)) == [loose], "no response open: relayed as is"


def test_bad_upstream_audio_in_the_relay_is_an_upstream_error() -> None:
    sc = relay()
    relay_respond(sc, chunks=1)
    (err,) = errors(
        sc.up({"type": "response.output_audio.delta", "response_id": RID, "delta": "!!"})
    )
    assert err["code"] == "upstream_error"


def test_relay_audio_at_the_clients_rate_passes_untouched_and_other_rates_are_resampled() -> None:
    sc = relay()
    out = relay_respond(sc, chunks=1, rate=24000)
    delta = the(client_events(out), "response.output_audio.delta")
    assert delta["sample_rate_hz"] == 24000
    sc2 = relay()
    out = relay_respond(sc2, chunks=2, rate=16000)
    deltas = [e for e in client_events(out) if e["type"] == "response.output_audio.delta"]
    assert deltas and all(d["sample_rate_hz"] == 24000 for d in deltas)


def test_upstream_speech_events_are_relayed_except_right_after_a_cut() -> None:
    sc = relay(min_barge_in_ms=200)
    relay_respond(sc, chunks=10)
    assert "response.done" in types(cut(sc))
    started = {"type": "input_audio_buffer.speech_started", "item_id": "u"}
    assert not sc.up(started), "the proxy already said so"
    assert types(sc.up({"type": "input_audio_buffer.committed", "item_id": "u"})) == [
        "input_audio_buffer.committed"
    ]
    # The upstream's next speech is relayed (a stop only after its start was).
    started = {"type": "input_audio_buffer.speech_started", "item_id": "u2"}
    assert types(sc.up(started)) == ["input_audio_buffer.speech_started"]
    stopped = {"type": "input_audio_buffer.speech_stopped", "item_id": "u2"}
    assert types(sc.up(stopped)) == ["input_audio_buffer.speech_stopped"]


def test_a_relay_tick_with_nothing_to_report_sends_nothing() -> None:
    sc = relay()
    assert not sc.s.handle(Tick(1000.0))
    relay_respond(sc, chunks=2)
    assert not sc.s.handle(Tick(sc.now + 10_000))


def test_a_restored_relay_with_its_upstream_resumed_reports_a_finished_playback() -> None:
    sc = relay(min_barge_in_ms=200)
    relay_respond(sc, chunks=10)
    cut(sc)  # the proxy now reports playback itself
    sc.speak([0.05] * 20)  # and stops: the next answer is not spoken over
    rid2 = "resp-up-2"
    relay_respond(sc, chunks=3, rid=rid2)
    relay_done(sc, rid2)
    snap = sc.s.snapshot()
    assert snap["playback_reports"]["playing"]["response_id"] == rid2
    moved = BargeInRelaySession(SID, "demo", ShimSettings(), {"supports_barge_in": False})
    resumed = {"type": "session.resumed", "session_id": "up-1", "resume_token": "tk"}
    assert not moved.restore(snap, resumed=resumed, now=sc.now)
    (ack,) = [a.event for a in moved.handle(Tick(sc.now + 1)) if isinstance(a, SendUpstream)]
    assert ack["type"] == "playback.ack" and ack["played_ms"] == 300


def test_send_client_events_from_the_relay_never_carry_the_upstream_seq() -> None:
    sc = relay()
    out = relay_respond(sc, chunks=2)
    assert all("server_event_seq" not in a.event for a in out if isinstance(a, SendClient))
