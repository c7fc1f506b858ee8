"""One user turn, one item id, in GA order, for a GA client over a duplex upstream.

GA tells a user turn as ``speech_started`` (item X), ``speech_stopped`` (X),
``input_audio_buffer.committed`` (X), ``conversation.item.added`` / ``done`` (X),
then the response; clients (the Agents SDK, the realtime console) correlate these
by item id. Over a duplex upstream two things break that (``docs/protocol.md``,
"One user turn, one item id"):

* a barge-in is told by the proxy (``shim/turns.py``), under an item id of its own,
  while the upstream commits that same speech under its id, maybe before the
  proxy's VAD has heard the speech stop;
* vLLM-Omni adds the user item before it says the buffer was committed.

So every event bound for the client passes through ``UserTurnOrder.to_client``:

* the user item the upstream adds while a told turn is open is that turn's: the
  upstream's id is mapped to the one the client was told, in this and every later
  event (ids, ``previous_item_id`` chains, retrieve / delete answers), and back in
  what the client sends upstream (``to_upstream``);
* that item's ``conversation.item.added`` waits for its ``committed``;
* a turn committed before it was told stopped gets its ``speech_stopped`` first
  (at the end of the input received so far); the proxy's own stop for it, later,
  is dropped.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from shim import wire
from shim.actions import Action, ForwardUpstream, SendClient, SendUpstream

APPEND = "input_audio_buffer.append"
# The answer's stream names no user item; read for none (the bulk of all events).
STREAMED = frozenset({"response.output_audio.delta", "response.output_audio_transcript.delta"})
STARTED = "input_audio_buffer.speech_started"
STOPPED = "input_audio_buffer.speech_stopped"
COMMITTED = "input_audio_buffer.committed"
# The upstream adds a user item with both (``conversation.item.created`` is GA's too).
ADDED = frozenset({"conversation.item.added", "conversation.item.created"})
# Mapped ids kept: a long session must not grow without bound; older items are
# far out of any client's reach (the upstream itself forgets them).
MAPPED_KEPT = 256
# The session snapshot's key for the mapped ids: a replica that takes the session over
# names earlier turns as the client was told (the open turn's order starts afresh).
KEY = "turn_ids"


def _renamed(value: Any, names: dict[str, str]) -> Any:
    """``value`` with every string that is a key of ``names`` replaced by its value."""
    if isinstance(value, str):
        return names.get(value, value)
    if isinstance(value, dict):
        return {k: _renamed(v, names) for k, v in value.items()}
    if isinstance(value, list):
        return [_renamed(v, names) for v in value]
    return value


def _spoken_user_item(ev: dict[str, Any]) -> str | None:
    """The id of the user item of audio input that ``ev`` adds, if it adds one."""
    item = ev.get("item")
    if ev.get("type") not in ADDED or not isinstance(item, dict) or item.get("role") != "user":
        return None
    content = item.get("content")
    spoken = isinstance(content, list) and any(
        isinstance(p, dict) and p.get("type") == "input_audio" for p in content
    )
    iid = item.get("id")
    return iid if spoken and isinstance(iid, str) else None


class UserTurnOrder:
    def __init__(self) -> None:
        self.open: str | None = None  # the told turn not yet committed
        self.stopped = False  # its speech_stopped went out
        self.closed: str | None = None  # the last turn committed
        self.held: list[SendClient] = []  # the open turn's item added, before its commit
        self.taken: str | None = None  # the upstream's id of the open turn's item
        self.to_told: OrderedDict[str, str] = OrderedDict()  # upstream id -> told id
        self.to_upstream_ids: dict[str, str] = {}  # told id -> upstream id

    def wire(self) -> dict[str, Any]:
        """The snapshot's part: the mapped ids, oldest first (nothing when none)."""
        return {KEY: [[u, t] for u, t in self.to_told.items()]} if self.to_told else {}

    def restore(self, snap: Mapping[str, Any]) -> None:
        """Take the mapped ids back from ``wire``'s part of ``snap``, if it has one."""
        for pair in snap.get(KEY) or ():
            if isinstance(pair, list) and len(pair) == 2 and all(isinstance(i, str) for i in pair):
                self._map(pair[0], pair[1])

    def to_client(self, actions: list[Action], input_end_ms: int) -> list[Action]:
        """The client's events put in GA order and named as told; others as they are."""
        out: list[Action] = []
        for action in actions:
            if isinstance(action, SendClient):
                out += self._event(action, input_end_ms)
            else:
                out.append(action)
        return out

    def to_upstream(self, actions: list[Action]) -> list[Action]:
        """What goes upstream names the upstream's items, not the ids told the client."""
        names = self.to_upstream_ids
        if not names:
            return actions
        out: list[Action] = []
        for action in actions:
            if isinstance(action, SendUpstream) and action.event.get("type") != APPEND:
                action = SendUpstream(_renamed(action.event, names))
            elif isinstance(action, ForwardUpstream) and any(t in action.raw for t in names):
                try:
                    parsed = json.loads(action.raw)
                except ValueError:
                    parsed = None
                if isinstance(parsed, dict):
                    action = ForwardUpstream(json.dumps(_renamed(parsed, names)))
            out.append(action)
        return out

    def _event(self, action: SendClient, input_end_ms: int) -> list[Action]:
        ev = action.event
        if self.to_told and ev.get("type") not in STREAMED:
            ev = _renamed(ev, self.to_told)
            action = SendClient(ev)
        kind = ev.get("type")
        spoken = _spoken_user_item(ev)
        # The item of the open turn (its first spoken item, named as told), or of a
        # commit with no told turn (push-to-talk): after its commit.
        if spoken is not None and (self.open is None or self.taken is None or spoken == self.open):
            if self.open is not None and spoken != self.open:
                self._map(spoken, self.open)
                ev = _renamed(ev, {spoken: self.open})
            self.taken = spoken if self.open is not None else None
            self.held.append(SendClient(ev))
            return []
        out: list[Action] = []
        if self.held and kind != COMMITTED:
            out += self.held  # no commit came right after its item: as they were
            self.held = []
        if kind == STARTED:
            self.open, self.stopped, self.taken = str(ev.get("item_id")), False, None
            return [*out, action]
        if kind == STOPPED:
            told = ev.get("item_id")
            if told == self.closed or (self.open is not None and self.stopped):
                return out  # its stop was told already, at its commit
            self.stopped = self.open is not None
            if self.open is not None and told != self.open:
                action = SendClient({**ev, "item_id": self.open})
            return [*out, action]
        if kind == COMMITTED:
            return out + self._committed(ev, input_end_ms)
        return [*out, action]

    def _committed(self, ev: dict[str, Any], input_end_ms: int) -> list[Action]:
        iid = ev.get("item_id")
        if self.open is not None and iid != self.open and self.taken is None:
            if isinstance(iid, str) and iid not in self.to_upstream_ids:
                self._map(iid, self.open)  # no item added first: the commit names it
                ev = {**ev, "item_id": self.open}
        out: list[Action] = []
        if self.open is not None and ev.get("item_id") == self.open and not self.stopped:
            out.append(SendClient(wire.speech_stopped(self.open, input_end_ms)))
        out += [SendClient(ev), *self.held]
        self.held = []
        if ev.get("item_id") == self.open:
            self.closed, self.open, self.stopped, self.taken = self.open, None, False, None
        return out

    def _map(self, upstream_id: str, told: str) -> None:
        self.to_told[upstream_id] = told
        self.to_upstream_ids[told] = upstream_id
        while len(self.to_told) > MAPPED_KEPT:
            _, old = self.to_told.popitem(last=False)
            self.to_upstream_ids.pop(old, None)
