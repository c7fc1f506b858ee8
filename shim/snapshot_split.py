"""A snapshot split for the store: the parts that change rarely kept apart.

``shim/snapshot.py`` builds the snapshot; a store writes each part below only
when it changes.
"""

from __future__ import annotations

from typing import Any

# Big parts of a snapshot that change rarely: the settings (instructions, the client's
# update as sent upstream) and the conversation so far (once a turn). A store keeps
# them apart from the rest, which moves with every event, and writes each only when
# it changes.
SETTINGS_KEYS = ("instructions", "upstream_update")
CONVERSATION_KEYS = ("history", "cancelled")


def split_static(
    wire: dict[str, Any],
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """(the rest, the settings, the conversation) of a snapshot; ``join_static`` undoes it."""
    settings = {k: wire[k] for k in SETTINGS_KEYS if k in wire}
    conversation = {k: wire[k] for k in CONVERSATION_KEYS if k in wire}
    rest = {k: v for k, v in wire.items() if k not in settings and k not in conversation}
    return rest, settings, conversation


def join_static(rest: dict[str, Any], *parts: dict[str, Any]) -> dict[str, Any]:
    out = dict(rest)
    for part in parts:
        out.update(part)
    return out
