"""One integer member of a JSON object's top level, read from text no parser takes.

orjson refuses an object nested deeper than 1024 levels. An upstream event that deep
is dropped (``[server] max_json_depth``), but its ``server_event_seq`` must still reach
the shim, or the next event looks like one after a lost event
(``proxy/emulated/upstream_frames.py``). This reads it with a scan of the tokens, no
recursion: strings (with their escapes) are skipped whole, brackets are counted, and
a key is taken only at the top level, so the same name inside a nested object or
inside a string is never mistaken for it."""

from __future__ import annotations

import re
from dataclasses import dataclass

import orjson

# Outside strings, what moves the scan on; a run of brackets is one step (nesting
# thousands deep costs a few steps, not one a bracket).
_STRUCTURE = re.compile(r'"|[{\[]+|[}\]]+|[,:]')
_STRING_END = re.compile(r'["\\]')  # inside a string: its end or an escape
_INT = re.compile(r"[ \t\n\r]*(-?(?:0|[1-9][0-9]*))[ \t\n\r]*(?=[,}])")
_WHITESPACE = " \t\n\r"
# orjson reads an integer within these bounds as an int, any other as a float
_INT_MIN, _INT_MAX = -(2**63), 2**64 - 1


@dataclass(frozen=True, slots=True)
class TopLevel:
    """What the scan found: how deeply the object nests (itself counts as one) and
    the integer value of the member asked for, or None (absent, or no integer)."""

    depth: int
    value: int | None


def top_level_int(raw: str, key: str) -> TopLevel | None:
    """The integer member ``key`` of the JSON object ``raw``; None if ``raw`` is no
    object whose strings end and whose brackets balance (the rest is not checked).
    Of repeated members the last counts, as for a parser."""
    start = len(raw) - len(raw.lstrip(_WHITESPACE))
    if not raw.startswith("{", start):
        return None
    depth = deepest = 0
    expect_key = False  # the next string at the top level names a member
    member: str | None = None  # the name of the top-level member whose value is next
    value: int | None = None
    pos = start
    while True:
        found = _STRUCTURE.search(raw, pos)
        if found is None:
            return None  # the object never closed
        token, pos = found.group(), found.end()
        char = token[0]
        if char == '"':
            end = _string_end(raw, pos)
            if end is None:
                return None
            if depth == 1 and expect_key:
                member, expect_key = _decoded(raw[pos - 1 : end]), False
            pos = end
        elif char == ":":
            if depth == 1 and member == key:
                number = _INT.match(raw, pos)
                value = int(number.group(1)) if number else None
                if value is not None and not _INT_MIN <= value <= _INT_MAX:
                    value = None
            member = None
        elif char in "{[":
            depth += len(token)
            deepest = max(deepest, depth)
            expect_key = depth == 1
        elif char in "}]":
            depth -= len(token)
            if depth == 0:
                if token[-1] != "}" or raw[pos:].strip(_WHITESPACE):
                    return None
                return TopLevel(deepest, value)
            if depth < 0:
                return None
        else:  # ","
            expect_key = depth == 1


def _string_end(raw: str, pos: int) -> int | None:
    """Just past the closing quote of the string whose contents start at ``pos``."""
    while True:
        found = _STRING_END.search(raw, pos)
        if found is None:
            return None
        if found.group() == '"':
            return found.end()
        pos = found.end() + 1  # an escape: the character after the backslash is its own


def _decoded(literal: str) -> str | None:
    """The text of a JSON string literal (quotes included); None if it is not one."""
    if "\\" not in literal:
        return literal[1:-1]
    try:
        text = orjson.loads(literal)
    except orjson.JSONDecodeError:
        return None
    return text if isinstance(text, str) else None
