"""A push-to-talk commit waiting for the upstream's answer to end moves with the session
(``shim/dialects/relay_wait_snapshot.py``): the replica that takes it over sends the
turn once, whole, when the answer ends; and what waits is bounded."""

from __future__ import annotations

from typing import Any

import orjson

from shim.actions import Action, ForwardUpstream, SendUpstream
from shim.dialects.relay_turn_wait import MAX_WAITING_CHARS
from shim.dialects.relay_wait_snapshot import KEY
from tests.shim_ga_relay_script import RID, answer_delta
from tests.shim_ga_resumable import UP, ga, make
from tests.shim_ga_turn_steps import APPEND, COMMIT, CREATE, SPEECH, burst, first_turn, sent_kinds
from tests.shim_script import Script, detection


def generating(sc: Script, chunks: int = 10) -> int:
    """The upstream's answer, journaled from seq 10, still generated: the next seq."""
    sc.upstream({"type": "response.created", "response": {"id": RID}, "server_event_seq": 10})
    for n in range(chunks):
        sc.tick(100)
        sc.upstream(answer_delta(server_event_seq=11 + n))
    return 11 + chunks


def done(sc: Script, seq: int) -> list[Action]:
    ev = {"type": "response.done", "response": {"id": RID, "status": "completed"}}
    return sc.upstream({**ev, "server_event_seq": seq})


def audio(out: list[Action]) -> list[str]:
    """The audio of the appends that went upstream, in order."""
    sent = [a.event for a in out if isinstance(a, SendUpstream)]
    sent += [orjson.loads(a.raw) for a in out if isinstance(a, ForwardUpstream)]
    return [str(e["audio"]) for e in sent if e.get("type") == APPEND]


def turn_kinds(out: list[Action]) -> list[str]:
    return [k for k in sent_kinds(out) if k in (APPEND, COMMIT, CREATE, "playback.ack")]


def waiting(sc: Script) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any], int]:
    """A turn pressed over the answer still generated, committed, then more audio:
    (the turn, what followed, the snapshot as the store keeps it, the next seq)."""
    first_turn(sc)
    detection(sc, on=False)
    seq = generating(sc)
    turn, out = burst(sc, [SPEECH] * 6)
    out += sc.client({"type": COMMIT}) + sc.client({"type": CREATE})
    after, more = burst(sc, [SPEECH] * 3)
    assert turn_kinds(out + more) == [], "it waits for the answer's end"
    snap = orjson.loads(orjson.dumps(sc.s.snapshot()))
    return turn, after, snap, seq


def test_a_waiting_commit_moves_and_goes_once_the_replayed_answer_ends() -> None:
    sc = make()
    turn, after, snap, seq = waiting(sc)
    assert KEY in snap
    moved = make(bound=False)
    resumed = {"type": "session.resumed", "session_id": UP, "resume_token": "tok-2"}
    ga(moved).restore(snap, resumed, now=sc.now)
    assert turn_kinds(moved.tick(50)) == [], "the answer is still generated: it waits"
    out = done(moved, seq)  # the upstream replays the answer's end
    kinds = turn_kinds(out)
    assert kinds == ["playback.ack", *[APPEND] * 6, COMMIT, CREATE, *[APPEND] * 3], kinds
    assert audio(out) == [e["audio"] for e in turn + after], "whole, in order, once"
    assert KEY not in moved.s.snapshot(), "sent: no later snapshot has it"
    assert turn_kinds(moved.tick(50)) == []


def test_a_waiting_commit_moved_onto_a_fresh_upstream_goes_at_the_next_input() -> None:
    sc = make()
    turn, after, snap, _ = waiting(sc)
    moved = make(bound=False)
    ga(moved).restore(snap, None, now=sc.now)  # the answer ended there, incomplete
    out = moved.tick(50)
    assert turn_kinds(out) == [*[APPEND] * 6, COMMIT, CREATE, *[APPEND] * 3], sent_kinds(out)
    assert audio(out) == [e["audio"] for e in turn + after]
    assert turn_kinds(moved.tick(50)) == []


def test_a_snapshot_after_the_commit_went_has_nothing_waiting() -> None:
    sc = make()
    _, _, _, seq = waiting(sc)
    assert turn_kinds(done(sc, seq))
    assert KEY not in sc.s.snapshot(), "a move does not send it again"


def test_what_waits_is_bounded_then_goes_on_in_order() -> None:
    """A client that keeps talking while the answer is generated: past the bound what
    waited goes on (as a commit over the answer did before it waited), and the
    snapshot stays bounded."""
    sc = make()
    turn, after, _, _ = waiting(sc)
    chunk = {"type": APPEND, "audio": "A" * 64_000}  # 1 s of 24 kHz PCM16, as base64
    out: list[Action] = []
    sizes = []
    for _ in range(MAX_WAITING_CHARS // 64_000 + 1):
        out += sc.client(dict(chunk))
        sizes.append(len(orjson.dumps(sc.s.snapshot())))
    assert COMMIT in turn_kinds(out), "released past the bound, the answer still generated"
    assert audio(out)[: len(turn) + len(after)] == [e["audio"] for e in turn + after]
    assert max(sizes) < 2 * MAX_WAITING_CHARS
    assert KEY not in sc.s.snapshot()


def test_what_waited_is_on_the_fresh_upstream_sessions_timeline() -> None:
    """The held turn and the appends queued behind the commit both reach the fresh
    session: its map of the client's timeline counts all of them, in order."""
    sc = make()
    _, _, snap, _ = waiting(sc)
    moved = make(bound=False)
    ga(moved).restore(snap, None, now=sc.now)
    moved.tick(50)
    tl = ga(moved).upstream_timeline.now
    assert tl.sent_samples == 9 * 32 * 16  # 6 windows of the turn, 3 after the commit
    assert tl.client_ms(6 * 32) > tl.client_ms(5 * 32)  # in the order they went
