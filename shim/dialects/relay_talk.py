"""The conversation so far, as text, for a fresh upstream session.

When the upstream's own session cannot be resumed, the relay opens a fresh one
and gives it the talk so far as text items (the assistant's as heard). The fresh
session echoes those items back; the client has them already, so the echoes are
dropped.

It also knows which items the upstream has that are not the assistant's messages
(``others``): a truncate of one is refused as such, not as an item it does not have
(``shim/native_truncate.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from shim.actions import Action, SendUpstream
from shim.bounded_ids import BoundedIds
from shim.playback import PlaybackLedger

# Conversation items (as text) kept to give a fresh upstream session the talk so far:
# at most this many, of at most this many characters in all (the newest first), each
# clipped to ITEM_CHARS, so a client's huge text items cannot grow the session or
# its snapshot past them.
HISTORY_KEPT = 64
HISTORY_CHARS = 256 * 1024
ITEM_CHARS = 32 * 1024
OTHERS_KEPT = 256  # the latest items not the assistant's messages, by id
ITEM_ECHOES = ("conversation.item.added", "conversation.item.created", "conversation.item.done")


class Talk:
    def __init__(self) -> None:
        self.items: dict[str, tuple[str, str]] = {}  # item id -> (role, text), oldest first
        self.restoring: set[str] = set()  # given to a fresh upstream, echo not yet done
        self.others = BoundedIds(OTHERS_KEPT)  # not assistant messages

    def deleted(self, item_id: object) -> None:
        """The upstream deleted the item (``conversation.item.deleted``)."""
        if isinstance(item_id, str):
            self.others.discard(item_id)

    def on_item_event(self, kind: str, item: Mapping[str, Any], ledger: PlaybackLedger) -> bool:
        """Follow an upstream item event; True if it is an echo the client must not get."""
        iid = item.get("id")
        if isinstance(iid, str) and (item.get("type"), item.get("role")) != (
            "message",
            "assistant",
        ):
            self.others.add(iid)
        if iid in self.restoring:
            if kind == "conversation.item.done":
                self.restoring.discard(iid)
            return True
        if kind == "conversation.item.done":
            self._remember(item, ledger)
        return False

    def heard(self, item_id: str, text: str) -> None:
        """An assistant item was cut: keep what was heard of it."""
        if item_id in self.items:
            self.items[item_id] = ("assistant", text[:ITEM_CHARS])

    def give(self) -> list[Action]:
        """The conversation so far, for a fresh upstream session (as text items)."""
        out: list[Action] = []
        for iid, (role, text) in self.items.items():
            kind = "output_text" if role == "assistant" else "input_text"
            self.restoring.add(iid)
            item: dict[str, Any] = {"id": iid, "type": "message", "role": role}
            item["content"] = [{"type": kind, "text": text}]
            out.append(SendUpstream({"type": "conversation.item.create", "item": item}))
        return out

    def restore(self, history: Iterable[tuple[str, str, str]], restoring: Iterable[str]) -> None:
        for iid, role, text in history:
            self.items[iid] = (role, text)
        self.restoring.update(restoring)

    def _remember(self, item: Mapping[str, Any], ledger: PlaybackLedger) -> None:
        """Keep a finished conversation item as text (what was heard, for the assistant)."""
        iid, role = item.get("id"), item.get("role")
        if not isinstance(iid, str) or role not in ("user", "assistant", "system"):
            return
        texts: list[str] = []
        for part in item.get("content") or ():
            if isinstance(part, dict):
                text = part.get("text") if isinstance(part.get("text"), str) else None
                text = text or part.get("transcript")
                if isinstance(text, str) and text:
                    texts.append(text)
        pb = ledger.get(iid)
        if role == "assistant" and pb is not None and pb.truncated_ms is not None:
            texts = [pb.heard_transcript(pb.truncated_ms)]
        text = " ".join(texts).strip()
        if not text:
            return
        self.items[iid] = (str(role), text[:ITEM_CHARS])
        chars = sum(len(t) for _, t in self.items.values())
        while len(self.items) > HISTORY_KEPT or chars > HISTORY_CHARS:
            chars -= len(self.items.pop(next(iter(self.items)))[1])
