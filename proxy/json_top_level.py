"""One integer member of a JSON object's top level, read from text no parser takes.

orjson refuses an object nested deeper than 1024 levels. An upstream event that deep
is dropped (``[server] max_json_depth``), but its ``server_event_seq`` must still reach
the shim, or the next event looks like one after a lost event
(``proxy/emulated/upstream_frames.py``). This reads it with a scan of the tokens, no
recursion, that checks the grammar as a parser would: strings (escapes, surrogate
pairs, no control characters), numbers and literals, where each may stand, and that
every bracket closes one of its own kind (a stack of bracket runs, so nesting
thousands deep costs a few steps, not one a bracket). A key is taken only at the top
level, so the same name inside a nested object or inside a string is never mistaken
for it.

The scan is one Python step a token, some thousand times slower than the parser: a
frame of many megabytes of small tokens would hold the event loop for a minute.
Past ``STEP_BUDGET`` steps it gives up (None): such a frame is dropped without its
number, and the shim sees a gap, as for any event lost upstream."""

from __future__ import annotations

import re
from dataclasses import dataclass

import orjson

# A step costs about 2 µs (measured on a busy machine; a run of brackets, however
# long, is one step and its length costs C time only): 10k steps hold the loop some
# 20 ms at most. Only a frame past orjson's depth limit is scanned, no upstream event
# we know of is that deep, and its large parts (audio, text) are one string, one step.
STEP_BUDGET = 10_000

_WS = "[ \\t\\n\\r]*"
_CHAR = '[^"\\\\\\x00-\\x1f]++'  # inside a string: anything but its end, an escape, a control
_HEX = "[0-9a-fA-F]"
_ESCAPE = (
    '\\\\(?:["\\\\/bfnrt]|u(?:[dD][89abAB]' + _HEX + "{2}\\\\u[dD][c-fC-F]" + _HEX + "{2}"
    "|(?![dD][89a-fA-F])" + _HEX + "{4}))"
)
# One token, whitespace before it included; a run of brackets (spaces between them
# too) is one token.
_TOKEN = re.compile(
    _WS + "(?:"
    "(?P<open>[{\\[][{\\[ \\t\\n\\r]*)"
    "|(?P<close>[}\\]][}\\] \\t\\n\\r]*)"
    f'|(?P<string>"(?:{_CHAR}|{_ESCAPE})*+")'
    "|(?P<number>(?P<int>-?(?:0|[1-9][0-9]*))(?P<frac>(?:\\.[0-9]+)?(?:[eE][+-]?[0-9]+)?))"
    "|(?P<literal>true|false|null)"
    "|(?P<punct>[,:]))"
)
_OPEN_RUN = re.compile(r"\[+|\{")
_CLOSE_RUN = re.compile(r"\]+|\}+")
_NO_WS = str.maketrans("", "", " \t\n\r")
_WHITESPACE = " \t\n\r"
# orjson reads an integer within these bounds as an int, any other as a float
_INT_MIN, _INT_MAX = -(2**63), 2**64 - 1

# What may come next: a value; a value or "]"; a key or "}"; a key; ":"; "," or a close
_VALUE, _VALUE_OR_CLOSE, _KEY_OR_CLOSE, _KEY, _COLON, _AFTER = range(6)


@dataclass(frozen=True, slots=True)
class TopLevel:
    """What the scan found: how deeply the object nests (itself counts as one) and
    the integer value of the member asked for, or None (absent, or no integer)."""

    depth: int
    value: int | None


def top_level_int(raw: str, key: str) -> TopLevel | None:
    """The integer member ``key`` of the JSON object ``raw``; None if ``raw`` is no
    JSON object, or takes more than ``STEP_BUDGET`` tokens to read. Of repeated
    members the last counts, as for a parser."""
    if not raw.lstrip(_WHITESPACE).startswith("{"):
        return None
    runs: list[tuple[str, int]] = []  # open brackets: (kind, how many in a row)
    depth = deepest = 0
    expect = _VALUE
    member: str | None = None  # the top-level key whose value is next
    value: int | None = None
    pos = 0
    for _ in range(STEP_BUDGET):
        token = _TOKEN.match(raw, pos)
        if token is None:
            return None
        pos, kind = token.end(), token.lastgroup or ""
        if kind == "open":
            if expect not in (_VALUE, _VALUE_OR_CLOSE):
                return None
            brackets = token.group(kind).translate(_NO_WS)
            if "{" in brackets[:-1]:
                return None  # an object's first member is a key
            for run in _OPEN_RUN.findall(brackets):
                _push(runs, run[0], len(run))
            depth += len(brackets)
            deepest = max(deepest, depth)
            expect = _KEY_OR_CLOSE if brackets[-1] == "{" else _VALUE_OR_CLOSE
            continue
        if kind == "close":
            if expect not in (_AFTER, _VALUE_OR_CLOSE, _KEY_OR_CLOSE):
                return None
            for found in _CLOSE_RUN.finditer(token.group(kind).translate(_NO_WS)):
                run = found.group()
                if not _pop(runs, "[" if run[0] == "]" else "{", len(run)):
                    return None
                depth -= len(run)
            if not runs:  # the top level closed: nothing may follow
                return TopLevel(deepest, value) if pos == len(raw) else None
            expect = _AFTER
            continue
        if kind == "punct":
            comma = token.group(kind) == ","
            if expect != (_AFTER if comma else _COLON):
                return None
            in_object = runs[-1][0] == "{"
            expect = (_KEY if in_object else _VALUE) if comma else _VALUE
            if not comma and depth == 1 and member == key:
                following = _TOKEN.match(raw, pos)
                if following is not None and following.lastgroup == "number":
                    value = _int_value(following)
                else:
                    value = None
            continue
        if expect in (_KEY, _KEY_OR_CLOSE):
            if kind != "string":
                return None
            if depth == 1:
                member = _decoded(token.group(kind))
            expect = _COLON
            continue
        if expect not in (_VALUE, _VALUE_OR_CLOSE):
            return None
        expect = _AFTER
    return None  # over the budget


def _push(runs: list[tuple[str, int]], kind: str, count: int) -> None:
    if runs and runs[-1][0] == kind:
        runs[-1] = (kind, runs[-1][1] + count)
    else:
        runs.append((kind, count))


def _pop(runs: list[tuple[str, int]], kind: str, count: int) -> bool:
    """Close ``count`` brackets of ``kind``; False if the innermost open ones are not
    that many of that kind (runs of one kind are merged, so the next is another)."""
    if not runs or runs[-1][0] != kind or runs[-1][1] < count:
        return False
    left = runs[-1][1] - count
    if left:
        runs[-1] = (kind, left)
    else:
        runs.pop()
    return True


def _int_value(number: re.Match[str]) -> int | None:
    """The value orjson gives the number ``number`` if it is an int, else None."""
    if number.group("frac"):
        return None
    value = int(number.group("int"))
    return value if _INT_MIN <= value <= _INT_MAX else None


def _decoded(literal: str) -> str | None:
    """The text of a JSON string literal (quotes included, already checked)."""
    if "\\" not in literal:
        return literal[1:-1]
    try:
        text = orjson.loads(literal)
    except orjson.JSONDecodeError:
        return None
    return text if isinstance(text, str) else None
