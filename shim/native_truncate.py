"""A native client's ``conversation.item.truncate``, read as vLLM-Omni reads it.

vLLM-Omni takes the event apart first (its ``engine/duplex/realtime_commands.py``):
an ``item_id`` (``missing_item_id``), then a number for ``audio_end_ms`` (``bad_event``),
any number, taken as ``int()`` of it (toward zero: ``1200.7`` is 1200 and ``-0.5`` is 0),
and ``content_index`` the same way (anything else is 0). Only then does it look at its
conversation (``engine/duplex/realtime_events.py``, ``resolve_truncate_item``, with
``protocol/realtime/items.py``, ``validate_realtime_item_truncate``): the item must be
there (``item_not_found``), be the assistant's (``bad_event``), and only then is the
sign checked (``bad_event``), and last the end against the item's audio duration
(``bad_event``, see ``past_the_audio``). A GA client's truncate is read as GA reads it
(``shim/client_events.py``); docs/protocol.md, "Truncation".
"""

from __future__ import annotations

import math
from collections.abc import Container
from dataclasses import dataclass
from typing import Any

from shim.playback import PlaybackLedger
from shim.wire import NATIVE_NOT_FOUND

NOT_ASSISTANT = "conversation.item.truncate only supports assistant message items"
NEGATIVE = "conversation.item.truncate requires non-negative audio_end_ms"
EXCEEDS = "conversation.item.truncate audio_end_ms exceeds item audio duration"


@dataclass(frozen=True, slots=True)
class NativeTruncate:
    item_id: str
    audio_end_ms: int
    content_index: int


def _number(value: Any) -> int | None:
    """``int()`` of a number as vLLM-Omni takes one (``true`` is 1 there too); None
    for anything else. A non-finite one has no ``int()``: the proxy refuses it as
    not a number."""
    if not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return int(value)


def read(
    ev: dict[str, Any], ledger: PlaybackLedger, others: Container[str]
) -> NativeTruncate | tuple[str, str]:
    """The truncate vLLM-Omni would carry out, or the ``(code, message)`` it refuses
    it with. ``ledger`` holds the assistant's items; ``others`` the other items the
    proxy answers for (a turn-based upstream's user turns)."""
    item_id = ev.get("item_id")
    if not isinstance(item_id, str) or not item_id:
        return "missing_item_id", "conversation.item.truncate requires item_id"
    end = _number(ev.get("audio_end_ms"))
    if end is None:
        return "bad_event", "conversation.item.truncate requires numeric audio_end_ms"
    if ledger.get(item_id) is None:
        if item_id in others:
            return "bad_event", NOT_ASSISTANT
        return "item_not_found", NATIVE_NOT_FOUND + item_id
    if end < 0:
        return "bad_event", NEGATIVE
    index = _number(ev.get("content_index", 0))
    return NativeTruncate(item_id, end, max(0, index or 0))


def past_the_audio(end: int, sent_ms: float) -> tuple[str, str] | None:
    """vLLM-Omni's refusal of an end past the item's audio, or None.

    Its item's duration is whole ms and an end at it is taken; a duration of 0 is
    read as none (``audio_duration_ms or duration_ms or ...``), so an item without
    audio yet takes any end. The whole ms are its model's, rounded to the nearest
    (``round(samples * 1000 / rate)`` in the data planes, ``model_executor/models/``):
    1000 samples at 24 kHz are 42 ms there, so a client that rounds its played
    position the same way is not refused. The proxy's duration is the audio it sent
    the client, rounded so. It holds whatever an earlier truncate cut: that changes
    the transcript only (``truncate_realtime_item_content``). The checks before this
    one (the content part there, and audio) are ``shim/client_events.py``'s; the
    proxy's items carry their audio as their one part.
    """
    duration = round(sent_ms)
    if duration > 0 and end > duration:
        return "bad_event", EXCEEDS
    return None
