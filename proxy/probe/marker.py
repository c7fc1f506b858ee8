"""A client event whose double application the probe can see (for event_id dedupe).

A client that reconnects re-sends what it is not sure arrived; the
endpoint must drop a repeated ``event_id``. To see whether it did, the probe needs
an event with a countable effect. It tries, on the live session:

* ``conversation.item.create`` of a user text item carrying a nonce: each
  application adds one item (``conversation.item.added``/``created``/``done``);
* ``input_audio_buffer.clear``: each application answers ``input_audio_buffer.cleared``.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from proxy.probe.client import Event, ProbeConnection
from proxy.probe.tracks import item_transcript

ITEM_EVENTS = ("conversation.item.added", "conversation.item.created", "conversation.item.done")
TRY_S = 1.0


def _item_create(nonce: str) -> dict[str, Any]:
    return {
        "type": "conversation.item.create",
        "event_id": f"probe_{uuid.uuid4().hex[:16]}",
        "item": {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": f"probe marker {nonce}"}],
        },
    }


def _items_with(events: list[Event], nonce: str) -> set[str]:
    found: set[str] = set()
    for event in events:
        if event.type not in ITEM_EVENTS:
            continue
        item = event.data.get("item")
        text = item_transcript(item)
        if text is not None and nonce in text and isinstance(item, dict):
            found.add(str(item.get("id")))
    return found


@dataclass(slots=True)
class Marker:
    kind: str
    event: dict[str, Any]
    nonce: str = ""
    #: Loop time after which ``input_audio_buffer.cleared`` events count.
    since: float = 0.0
    notes: list[str] = field(default_factory=list)

    def count(self, events: list[Event]) -> int:
        """How many times the event took effect, over all connections' events."""
        if self.kind == "conversation.item.create":
            return len(_items_with(events, self.nonce))
        return sum(
            1 for e in events if e.type == "input_audio_buffer.cleared" and e.t >= self.since
        )


async def choose_marker(conn: ProbeConnection) -> Marker | None:
    """Try the candidates once on ``conn``; the first that visibly works is used."""
    nonce = uuid.uuid4().hex[:12]
    start = len(conn.events)
    await conn.send(_item_create(nonce))

    def item_or_error(event: Event) -> bool:
        return event.type == "error" or bool(_items_with([event], nonce))

    answer = await conn.wait_for(item_or_error, TRY_S, since=start)
    if answer is not None and answer.type != "error":
        real = uuid.uuid4().hex[:12]
        return Marker("conversation.item.create", _item_create(real), nonce=real)
    start = len(conn.events)
    await conn.send({"type": "input_audio_buffer.clear"})
    answer = await conn.wait_for(
        lambda e: e.type in ("input_audio_buffer.cleared", "error"), TRY_S, since=start
    )
    if answer is None or answer.type == "error":
        return None
    event = {"type": "input_audio_buffer.clear", "event_id": f"probe_{uuid.uuid4().hex[:16]}"}
    return Marker("input_audio_buffer.clear", event, since=conn.now())
