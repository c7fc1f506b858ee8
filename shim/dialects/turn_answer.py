"""``duplex_emulated``: the committed user turns waiting for an answer, and the answering
of them.

The turn-based upstream (``shim/dialects/turn_wire.py``) takes one audio turn per answer,
so each committed turn waits here until an answer takes it (``start_response``), none of
them lost: a GA client's turns answered by one ``response.create`` go up as one, and at
``WAITING`` a GA client's next turn joins the newest; a native client's commits not yet
answered are one turn, as vLLM-Omni's runner keeps them. Waiting audio past the longest
turn (``max_turn_ms``) loses its oldest part, said so with ``input_turns_too_long``.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from shim import wire
from shim.actions import AbortUpstream, Action, SendClient
from shim.assistant_audio import AssistantAudio
from shim.audio import Int16Array
from shim.dialects import turn_wire
from shim.dialects.turn_items import UserItems
from shim.input_history import InputHistory, ms_to_sample
from shim.output import ActiveResponse
from shim.settings import VAD_RATE, ShimSettings

WAITING = 4  # a GA client's turns waiting for an answer each; a later one joins the newest
TOO_LONG = "input_turns_too_long"


@dataclass
class PendingTurn:
    """A committed user turn not yet sent upstream as a turn to answer."""

    item_id: str
    audio: Int16Array
    # Answer it once the response in progress ends (a native client's commit during one).
    respond: bool = False


def _capped(turn: PendingTurn, limit: int) -> list[Action]:
    """``turn`` without its oldest audio past ``limit`` samples, said so."""
    over = turn.audio.size - limit
    if over <= 0:
        return []
    turn.audio = turn.audio[over:]
    msg = (
        f"the turns waiting for an answer exceed {limit * 1000 // VAD_RATE} ms of audio: "
        f"their first {over * 1000 // VAD_RATE} ms will not be heard"
    )
    return [SendClient(wire.error(TOO_LONG, msg))]


def waiting(pending: deque[PendingTurn], turn: PendingTurn, ga: bool, limit: int) -> list[Action]:
    """``turn`` added to the turns waiting for an answer, none of them lost. A GA
    client's (``ga``) joins the newest waiting one when that one is answered only with
    it (its ``response.create`` answers them as one, ``as_one_turn``) or when ``WAITING``
    wait already. A native client's joins the one waiting, whose answer after the one in
    progress this commit decides (``turn.respond``, set by ``commit``): vLLM-Omni's
    runner merges the audio of every commit not yet answered into one turn, whether an
    answer is running or not, and keeps the last such commit's ``response_create``
    (``engine/duplex/session/runner.py``, ``_flush_and_submit_committed_turn``,
    ``_defer_commit_behind_active_response``), and its session manager's count of
    pending commits goes down as the runner takes each (``_on_command``), so none is
    refused. Past ``limit`` samples the oldest audio goes, said so."""
    if pending and (not ga or not pending[-1].respond or len(pending) >= WAITING):
        last = pending.pop()
        audio = np.concatenate([last.audio, turn.audio])
        respond = (last.respond or turn.respond) if ga else turn.respond
        turn = PendingTurn(turn.item_id, audio, respond)
    pending.append(turn)
    return _capped(turn, limit)


def as_one_turn(pending: deque[PendingTurn], limit: int) -> list[Action]:
    """Every committed turn not yet answered, as one: GA's ``response.create`` answers
    the conversation as it stands, every user item since the last response, with one
    response (not one per item, each a response the client did not ask for). The
    dialect takes one audio turn per answer, so they go up as one, in order, no longer
    than a turn may be (``limit`` samples): past it the oldest audio goes, said so."""
    if len(pending) < 2:
        return []
    turns = list(pending)
    pending.clear()
    audio = np.concatenate([t.audio for t in turns])
    pending.append(PendingTurn(turns[-1].item_id, audio, any(t.respond for t in turns)))
    return _capped(pending[-1], limit)


class AnswerHost(Protocol):
    """What committing and answering a turn needs of the session (``turn_based.py``)."""

    settings: ShimSettings
    history: InputHistory
    pending: deque[PendingTurn]
    user_items: UserItems
    assistant_audio: AssistantAudio
    last_item_id: str | None
    commit_from_ms: int
    upstream_busy: bool
    final_text: str | None
    merges_turns: bool

    @property
    def response(self) -> ActiveResponse | None: ...

    def live(self) -> bool: ...

    def new_id(self, prefix: str) -> str: ...

    def new_response(self, response_id: str, item_id: str) -> ActiveResponse: ...

    def cancel_response(
        self, now: float, reason: str, truncate_at: int | None = None, announce: bool = True
    ) -> list[Action]: ...

    def open_upstream(self) -> list[Action]: ...


def commit(
    s: AnswerHost,
    item_id: str,
    audio: Int16Array,
    end_ms: int,
    respond: bool,
    now: float = 0.0,
    defer: bool = False,
) -> list[Action]:
    """A user turn committed and told so: answered now if it asks to be (``respond``),
    after the answer in progress if ``defer``, else when ``response.create`` asks."""
    prev, s.last_item_id, s.commit_from_ms = s.last_item_id, item_id, end_ms
    s.history.drop_before(end_ms)
    s.user_items.committed(item_id)
    out = turn_wire.committed_turn(item_id, prev)
    limit = ms_to_sample(s.settings.max_turn_ms)
    out += waiting(s.pending, PendingTurn(item_id, audio), s.merges_turns, limit)
    if respond and defer and s.live():
        # A client's commit (as vLLM-Omni's listen_only) or, with GA's
        # interrupt_response false, a VAD turn over an answer is answered next.
        s.pending[-1].respond = True
    elif respond:
        out += start_response(s, now)
    return out


def answer_all(s: AnswerHost, now: float) -> list[Action]:
    """GA's ``response.create``: every turn waiting, answered by one response."""
    out = as_one_turn(s.pending, ms_to_sample(s.settings.max_turn_ms))
    return out + start_response(s, now)


def start_response(s: AnswerHost, now: float) -> list[Action]:
    """The oldest waiting turn sent up to be answered, its response opened."""
    out: list[Action] = []
    old = s.response
    if old is not None and old.live:
        # A new turn supersedes a response still going: it ends, said so, first.
        out += s.cancel_response(now, reason="turn_detected")
    turn = s.pending.popleft()
    # The answer's item is named after its response, as vLLM-Omni names it
    # (``item_<response_id>``): native clients ack playback by that name.
    rid = s.new_id("resp")
    aid = f"item_{rid}"
    prev = s.last_item_id
    s.last_item_id = aid
    s.new_response(rid, aid).previous_item_id = prev
    s.assistant_audio.reset()
    s.final_text = None
    out += turn_wire.response_opening(rid, aid, prev)
    if s.upstream_busy:
        # The previous generation is still running upstream and cannot be
        # interrupted in this dialect: drop that socket, take a fresh one.
        out.append(AbortUpstream(reason="new turn while generating", redial=True))
        out += s.open_upstream()
    s.upstream_busy = True
    return out + turn_wire.user_turn(turn.audio)
