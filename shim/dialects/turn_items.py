"""The user turns ``duplex_emulated`` committed, as ``conversation.item.retrieve`` finds them.

Over a turn-based upstream the proxy commits each user turn itself
(``shim/dialects/turn_wire.py``), so the conversation's user items are the proxy's to
answer for; the assistant's are in the playback ledger (``shim/client_events.py``).
An item is told as it was added: an input-audio message, completed, with no
transcript (the dialect transcribes nothing). The most recent ones are kept.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from dataclasses import dataclass
from typing import Any

import numpy as np

from shim import wire
from shim.actions import Action, SendClient
from shim.audio import Int16Array
from shim.settings import VAD_RATE

KEPT = 64  # as many as the playback ledger keeps of the assistant's
WAITING = 4  # turns waiting for an answer each; a later one joins the newest
TOO_LONG = "input_turns_too_long"


@dataclass
class PendingTurn:
    """A committed user turn not yet sent upstream as a turn to answer."""

    item_id: str
    audio: Int16Array
    # Answer it once the response in progress ends (a native client's commit during one).
    respond: bool = False


def waiting(
    pending: deque[PendingTurn], turn: PendingTurn, merge: bool, limit: int
) -> list[Action]:
    """``turn`` added to the turns waiting for an answer, none of them lost: merged into
    the newest waiting one when that one is answered only with it (``merge``: a GA
    client's, whose ``response.create`` answers them as one, ``as_one_turn``) or when
    ``WAITING`` wait already. Past ``limit`` samples the oldest audio goes, said so."""
    if pending and ((merge and not pending[-1].respond) or len(pending) >= WAITING):
        last = pending.pop()
        audio = np.concatenate([last.audio, turn.audio])
        turn = PendingTurn(turn.item_id, audio, last.respond or turn.respond)
    pending.append(turn)
    over = turn.audio.size - limit
    if over <= 0:
        return []
    turn.audio = turn.audio[over:]
    msg = (
        f"the turns waiting for an answer exceed {limit * 1000 // VAD_RATE} ms of audio: "
        f"their first {over * 1000 // VAD_RATE} ms will not be heard"
    )
    return [SendClient(wire.error(TOO_LONG, msg))]


def as_one_turn(pending: deque[PendingTurn]) -> None:
    """Every committed turn not yet answered, as one: GA's ``response.create`` answers
    the conversation as it stands, every user item since the last response, with one
    response (not one per item, each a response the client did not ask for). The
    dialect takes one audio turn per answer, so they go up as one, in order."""
    if len(pending) < 2:
        return
    turns = list(pending)
    pending.clear()
    audio = np.concatenate([t.audio for t in turns])
    pending.append(PendingTurn(turns[-1].item_id, audio, any(t.respond for t in turns)))


class UserItems:
    __slots__ = ("_ids",)

    def __init__(self) -> None:
        self._ids: OrderedDict[str, None] = OrderedDict()

    def committed(self, item_id: str) -> None:
        self._ids[item_id] = None
        while len(self._ids) > KEPT:
            self._ids.popitem(last=False)

    def retrieved(self, ev: dict[str, Any]) -> list[Action] | None:
        """``conversation.item.retrieved`` for one of them, else None."""
        item_id = ev.get("item_id")
        if not isinstance(item_id, str) or item_id not in self._ids:
            return None
        return [
            SendClient({"type": "conversation.item.retrieved", "item": wire.user_item(item_id)})
        ]
