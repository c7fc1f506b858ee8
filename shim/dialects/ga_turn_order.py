"""One user turn, one item id, in GA order, for a GA client over a duplex upstream.

GA tells a user turn as ``speech_started`` (item X), ``speech_stopped`` (X),
``input_audio_buffer.committed`` (X), ``conversation.item.added`` / ``done`` (X),
then the response; clients (the Agents SDK, the realtime console) correlate these
by item id. Over a duplex upstream two things break that (``docs/protocol.md``,
"One user turn, one item id"):

* a barge-in is told by the proxy (``shim/barge_in.py``), under an item id of its own,
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
  is dropped;
* a ``speech_started`` naming no item (vLLM-Omni's own, ``item_id`` null, told as
  ``""`` by ``ga_events.py``) opens no turn: ``""`` is never mapped;
* items the client creates itself (``conversation.item.create`` with an ``item.id``)
  are never a turn's item and never wait for a commit.

All of it moves with the session's snapshot (``wire`` / ``restore``).
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from shim import wire
from shim.actions import Action, ForwardUpstream, SendClient, SendUpstream

APPEND = "input_audio_buffer.append"
CREATE = "conversation.item.create"
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
# Ids of the client's own items kept: only their echo, right after the create, is read.
CREATED_KEPT = 32
# The session snapshot's keys: the mapped ids, so that a replica that takes the session
# over names earlier turns as the client was told; and the open turn's state, so that
# it orders that turn on (a held item is past the upstream's replay point).
KEY = "turn_ids"
STATE_KEY = "turn_order"


def _renamed(value: Any, names: dict[str, str]) -> Any:
    """``value`` with every string that is a key of ``names`` replaced by its value."""
    if isinstance(value, str):
        return names.get(value, value)
    if isinstance(value, dict):
        return {k: _renamed(v, names) for k, v in value.items()}
    if isinstance(value, list):
        return [_renamed(v, names) for v in value]
    return value


def _spoken_user_item(ev: Mapping[str, Any]) -> str | None:
    """The id of the user item of audio input that ``ev`` adds, if it adds one."""
    item = ev.get("item")
    if ev.get("type") not in ADDED or not isinstance(item, dict) or item.get("role") != "user":
        return None
    content = item.get("content")
    spoken = isinstance(content, list) and any(
        isinstance(p, dict) and p.get("type") == "input_audio" for p in content
    )
    iid = item.get("id")
    return iid if spoken and isinstance(iid, str) and iid else None


def _text(value: Any) -> str | None:
    """``value`` if it is a non-empty string (an item id), else None."""
    return value if isinstance(value, str) and value else None


class UserTurnOrder:
    def __init__(self) -> None:
        self.open: str | None = None  # the told turn not yet committed
        self.stopped = False  # its speech_stopped went out
        self.closed: str | None = None  # the last turn committed
        self.held: list[dict[str, Any]] = []  # one user item's added / created, before its commit
        self.taken: str | None = None  # the upstream's id of the open turn's item
        self.to_told: OrderedDict[str, str] = OrderedDict()  # upstream id -> told id
        self.to_upstream_ids: dict[str, str] = {}  # told id -> upstream id
        self.created: dict[str, None] = {}  # the client's own items' ids, oldest first

    def wire(self) -> dict[str, Any]:
        """The snapshot's part: the mapped ids, oldest first, and the open turn's state
        (each only when there is some)."""
        part: dict[str, Any] = {}
        if self.to_told:
            part[KEY] = [[u, t] for u, t in self.to_told.items()]
        state = {
            "open": self.open,
            "stopped": self.stopped,
            "closed": self.closed,
            "taken": self.taken,
            "held": self.held,
            "created": list(self.created),
        }
        state = {k: v for k, v in state.items() if v}
        if state:
            part[STATE_KEY] = state
        return part

    def restore(self, snap: Mapping[str, Any]) -> None:
        """Take back what ``wire`` put in ``snap``, as much of it as is there."""
        for pair in snap.get(KEY) or ():
            if isinstance(pair, list) and len(pair) == 2 and all(isinstance(i, str) for i in pair):
                self._map(pair[0], pair[1])
        state = snap.get(STATE_KEY)
        if not isinstance(state, Mapping):
            return
        self.open, self.closed = _text(state.get("open")), _text(state.get("closed"))
        self.taken, self.stopped = _text(state.get("taken")), state.get("stopped") is True
        held = state.get("held")
        held = held if isinstance(held, list) else []
        self.held = [ev for ev in held if isinstance(ev, dict) and _spoken_user_item(ev)]
        created = state.get("created")
        for iid in created if isinstance(created, list) else ():
            self._note_created(iid)

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
        """What goes upstream names the upstream's items, not the ids told the client;
        the ids of the items the client creates are noted on the way."""
        names = self.to_upstream_ids
        out: list[Action] = []
        for action in actions:
            if isinstance(action, SendUpstream) and action.event.get("type") != APPEND:
                self._note_create(action.event)
                if names:
                    action = SendUpstream(_renamed(action.event, names))
            elif isinstance(action, ForwardUpstream):
                renames = any(t in action.raw for t in names)
                if renames or CREATE in action.raw:
                    try:
                        parsed = json.loads(action.raw)
                    except ValueError:
                        parsed = None
                    if isinstance(parsed, dict):
                        self._note_create(parsed)
                        if renames:
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
        if spoken in self.created:
            spoken = None  # the client's own item: no turn's, and no commit comes for it
        # The item of the open turn (its first spoken item, named as told), or of a
        # commit with no told turn (push-to-talk): after its commit.
        if spoken is not None and (self.open is None or self.taken is None or spoken == self.open):
            named = self.open if self.open is not None else spoken
            # Another item's, still held: its commit did not come right after it.
            out = self._release() if self.held and _spoken_user_item(self.held[0]) != named else []
            if named != spoken:
                self._map(spoken, named)
                ev = _renamed(ev, {spoken: named})
            self.taken = spoken if self.open is not None else None
            self.held.append(ev)
            return out
        out = []
        # The open turn's stop goes out ahead of its held item (GA order: the stop,
        # the commit, then the item).
        if kind != COMMITTED and not (kind == STOPPED and self.open is not None):
            out = self._release()  # no commit came right after its item: as they were
        if kind == STARTED:
            told = _text(ev.get("item_id"))
            if told is not None:  # one naming no item opens no turn
                self.open, self.stopped, self.taken = told, False, None
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
        iid = _text(ev.get("item_id"))
        if self.open is not None and iid != self.open and self.taken is None:
            if iid is not None and iid not in self.to_upstream_ids:
                self._map(iid, self.open)  # no item added first: the commit names it
                ev = {**ev, "item_id": self.open}
        out: list[Action] = []
        if self.open is not None and ev.get("item_id") == self.open and not self.stopped:
            out.append(SendClient(wire.speech_stopped(self.open, input_end_ms)))
        out += [SendClient(ev), *self._release()]
        if ev.get("item_id") == self.open:
            self.closed, self.open, self.stopped, self.taken = self.open, None, False, None
        return out

    def _release(self) -> list[Action]:
        out: list[Action] = [SendClient(ev) for ev in self.held]
        self.held = []
        return out

    def _note_create(self, ev: Mapping[str, Any]) -> None:
        item = ev.get("item")
        if ev.get("type") == CREATE and isinstance(item, dict):
            self._note_created(item.get("id"))

    def _note_created(self, iid: Any) -> None:
        if _text(iid) is None:
            return
        self.created[iid] = None
        while len(self.created) > CREATED_KEPT:
            del self.created[next(iter(self.created))]

    def _map(self, upstream_id: str, told: str) -> None:
        if not (upstream_id and told):
            return  # "" is no item's id (a start naming none): never renamed
        self.to_told[upstream_id] = told
        self.to_upstream_ids[told] = upstream_id
        while len(self.to_told) > MAPPED_KEPT:
            _, old = self.to_told.popitem(last=False)
            self.to_upstream_ids.pop(old, None)
