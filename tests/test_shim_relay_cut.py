"""The proxy's own cut of an upstream answer, decided by what it has seen of the answer
while the upstream may have just finished generating it (``shim/dialects/relay_cut.py``)."""

from __future__ import annotations

from typing import Any

from tests.duplex_relay_script import AID, RID, make, play_response, start_response
from tests.shim_script import Script, client_events, types, upstream_events

SENT_MS = 1000  # the answer start_response streams: 10 x 100 ms


def plays_on_upstream(cmds: list[dict[str, Any]], rid: str, sent_ms: int) -> bool:
    """What vLLM-Omni 0.30.0 makes of the cut's commands once it has generated ``rid``
    in full (docs/fidelity.md, row 1a): a ``response.cancel`` is refused as "already
    complete"; a clear naming it ends its playback; so does an ack of all it sent.
    Anything else leaves the answer playing, owning the turn."""
    for cmd in cmds:
        if cmd["type"] == "output_audio_buffer.clear" and cmd.get("response_id") == rid:
            return False
        if cmd["type"] == "playback.ack" and cmd.get("committed_ms", 0) >= sent_ms:
            return False
    return True


def cut(sc: Script) -> list[dict[str, Any]]:
    start_response(sc, chunks=10)  # the proxy has not seen its response.done yet
    out = sc.speak([0.9] * 10)
    assert "conversation.item.truncated" in types(out), "the proxy cut it"
    return [e for e in upstream_events(out) if e["type"] != "input_audio_buffer.append"]


def test_a_cut_that_meets_an_answer_just_generated_still_ends_it_upstream() -> None:
    sc = make()
    cmds = cut(sc)
    assert not plays_on_upstream(cmds, RID, SENT_MS), cmds
    assert [c["type"] for c in cmds] == ["playback.ack", "output_audio_buffer.clear"]
    assert cmds[0]["item_id"] == AID and cmds[0]["committed_ms"] < SENT_MS, "what was heard"
    # The upstream had finished: its own end of the answer, then its answer to the clear.
    out = sc.upstream({"type": "response.done", "response": {"id": RID, "status": "completed"}})
    out += sc.upstream({"type": "output_audio_buffer.cleared", "response_id": RID})
    assert client_events(out) == [], "the upstream's answers to the proxy's cut"
    # The turn is free upstream: its next answer reaches the client.
    sc.speak([0.05] * 20)
    out = play_response(sc, "resp-2", deltas=3)
    assert types(out)[0] == "response.created" and "response.done" in types(out)


def test_a_cut_of_an_answer_still_generated_keeps_its_end_from_the_client() -> None:
    """The clear cancels an answer still generated: the upstream ends it itself (reason
    ``output_audio_buffer_clear``), which the client, told already, does not get again."""
    sc = make()
    cut(sc)
    out = sc.upstream({"type": "output_audio_buffer.cleared", "response_id": RID})
    out += sc.upstream(
        {
            "type": "response.done",
            "response": {
                "id": RID,
                "status": "cancelled",
                "status_details": {"type": "cancelled", "reason": "output_audio_buffer_clear"},
            },
        }
    )
    assert client_events(out) == []


def test_a_cut_over_a_clients_own_commit_never_drops_that_turn() -> None:
    """A ``response.cancel`` also drops the upstream's committed input audio (vLLM-Omni
    0.30.0); the turn that cut the answer may be committed already. The clear does not."""
    sc = make()
    start_response(sc, chunks=10)
    sc.client({"type": "input_audio_buffer.commit"})
    out = sc.speak([0.9] * 10)
    assert "response.cancel" not in [e["type"] for e in upstream_events(out)]
