"""How deeply a parsed JSON value nests, checked without recursion.

orjson reads up to 1024 levels but writes only up to 254: an event nested deeper
than that parses, then fails where the proxy re-serializes it (the journal's stamp,
a frame for the upstream). Events are bounded at the edge instead
(``[server] max_json_depth``, docs/protocol.md)."""

from __future__ import annotations

from typing import Any


def nests_deeper_than(raw: str, value: Any, limit: int) -> bool:
    """True if ``value`` (parsed from ``raw``) has more than ``limit`` nested
    containers; the outermost object counts as one."""
    opens = raw.count("[") + raw.count("{")
    if opens <= limit:  # the common case: too few brackets to nest that deep
        return False
    if not isinstance(value, (dict, list)):
        return False
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        children = item.values() if isinstance(item, dict) else item
        for child in children:
            if isinstance(child, (dict, list)):
                stack.append((child, depth + 1))
    return False
