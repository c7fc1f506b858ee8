"""A GA client's playback reports in the barge-in relay: the proxy answers them in
GA's words, and the upstream's answers to them (vLLM-Omni's codes) are kept from
the client (``shim/dialects/relay_client.py``)."""

from __future__ import annotations

from shim.actions import NoteUpstreamError
from tests.shim_ga_relay_script import AID, RID, answer, make
from tests.shim_script import client_events, upstream_events

TOO_LATE = {
    "type": "error",
    "error": {
        "type": "invalid_request_error",
        "code": "playback_ack_too_late",
        "message": "playback.ack arrived after a later user input was committed.",
    },
}


def test_a_bad_playback_ack_is_refused_in_gas_words() -> None:
    sc = make()
    out = sc.client({"type": "playback.ack", "played_ms": "soon", "event_id": "evt_1"})
    assert not upstream_events(out)
    (err,) = client_events(out)
    assert err["type"] == "error"
    assert err["error"]["code"] == "invalid_event" and err["error"]["param"] == "played_ms"


def test_the_upstreams_answers_to_a_truncate_the_proxy_answered_are_kept() -> None:
    sc = make(truncates=True)
    answer(sc, chunks=5)
    done = {"type": "response.done", "response": {"id": RID, "status": "completed"}}
    sc.upstream(done | {"server_event_seq": 16})
    sc.tick(100)
    trunc = {"type": "conversation.item.truncate", "item_id": AID, "content_index": 0}
    out = sc.client(trunc | {"audio_end_ms": 200})
    assert [e["type"] for e in client_events(out)] == ["conversation.item.truncated"]
    assert "conversation.item.truncate" in [e["type"] for e in upstream_events(out)]
    for seq in (17, 18):  # the truncate's own ack and the proxy's ack of what was heard
        refused = sc.upstream(TOO_LATE | {"server_event_seq": seq})
        assert not client_events(refused), "the proxy answered the truncate already"
        assert any(isinstance(a, NoteUpstreamError) for a in refused)
