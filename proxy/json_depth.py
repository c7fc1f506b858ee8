"""How deeply a parsed JSON value nests, and how many values it holds, checked
without recursion.

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


def holds_more_values_than(raw: str, value: Any, limit: int) -> bool:
    """True if ``value`` (parsed from ``raw``) holds more than ``limit`` values in its
    containers (every key and list item counts). A few megabytes of ``{"k1":1,...}``
    parse into tens of megabytes of objects that every copy of the event multiplies
    (``[server] max_json_values``)."""
    if raw.count(",") < limit:  # every value after a container's first follows a comma
        return False
    if not isinstance(value, (dict, list)):
        return False
    stack: list[Any] = [value]
    count = 0
    while stack:
        item = stack.pop()
        count += len(item)
        if count > limit:
            return True
        children = item.values() if isinstance(item, dict) else item
        stack.extend(c for c in children if isinstance(c, (dict, list)) and c)
    return False
