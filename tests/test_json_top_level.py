"""The scan that reads one top-level integer of a JSON object too deep to parse
(proxy/json_top_level.py): only the top level counts, strings are skipped whole, the
grammar is checked as a parser would, and a frame too costly to scan is given up."""

from __future__ import annotations

import re

import orjson
import pytest

import proxy.json_top_level as scanner
from proxy.json_top_level import STEP_BUDGET, TopLevel, top_level_int

KEY = "server_event_seq"
DEEP = "[" * 1100 + "]" * 1100


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        ('{"server_event_seq":15}', 15),
        (' \n{ "server_event_seq" :\t15 , "x": 1 }\r\n', 15),
        ('{"a":{"server_event_seq":1},"server_event_seq":2}', 2),
        ('{"a":[{"server_event_seq":1}],"b":2}', None),
        ('{"a":{"server_event_seq":1}}', None),
        ('{"a":"\\"server_event_seq\\":3","server_event_seq":4}', 4),
        ('{"a":"\\"server_event_seq\\":3"}', None),
        ('{"a":"x\\\\","server_event_seq":5}', 5),
        ('{"a":"{[","server_event_seq":6,"b":"]}"}', 6),
        ('{"server_event_seq":"7"}', None),
        ('{"a":"server_event_seq","b":8}', None),
        ('{"server_\\u0065vent_seq":9}', 9),
        ('{"server_event_seq":-3}', -3),
        ('{"server_event_seq":0}', 0),
        ('{"server_event_seq":1.5}', None),
        ('{"server_event_seq":15.0}', None),
        ('{"server_event_seq":1e3}', None),
        ('{"server_event_seq":true}', None),
        ('{"server_event_seq":null}', None),
        ('{"server_event_seq":[1]}', None),
        ('{"server_event_seq":18446744073709551615}', 2**64 - 1),
        ('{"server_event_seq":18446744073709551616}', None),
        ('{"server_event_seq":-9223372036854775809}', None),
        ('{"server_event_seq":1,"server_event_seq":2}', 2),
        ('{"server_event_seq":1,"server_event_seq":"x"}', None),
        ("{}", None),
        ('{"a":[[{"server_event_seq":1}]],"server_event_seq":3}', 3),
        ('{"a":[[{"server_event_seq":1}]]}', None),
    ],
)
def test_only_a_top_level_integer_is_read_as_a_parser_would(raw: str, value: int | None) -> None:
    scan = top_level_int(raw, KEY)
    assert scan is not None and scan.value == value, scan
    parsed = orjson.loads(raw).get(KEY)
    wanted = parsed if isinstance(parsed, int) and not isinstance(parsed, bool) else None
    assert scan.value == wanted, "the scan and the parser disagree"


def test_an_object_too_deep_for_the_parser_is_read_with_its_depth() -> None:
    raw = '{"type":"x","a":' + DEEP + ',"server_event_seq":17,"b":"' + "[" * 10 + '"}'
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(raw)
    assert top_level_int(raw, KEY) == TopLevel(1101, 17)
    inner = '{"a":' + "[" * 1100 + '{"server_event_seq":1}' + "]" * 1100 + "}"
    assert top_level_int(inner, KEY) == TopLevel(1102, None)
    ragged = '{"a":[[[]],[[[{"b":[]}]]]],"server_event_seq":2}'
    assert top_level_int(ragged, KEY) == TopLevel(7, 2)


@pytest.mark.parametrize(
    "raw",
    [
        "",
        "   ",
        "[1]",
        '"server_event_seq"',
        "15",
        '{"server_event_seq":15',
        '{"server_event_seq":15}}',
        '{"server_event_seq":15} x',
        '{"server_event_seq":15]',
        '{"a":"unterminated,"server_event_seq":15}',
        '{"a":"ends in an escape\\',
        '{"a":[}',
        '{"a":[]}]}',
        '{"a":[]]]',
    ],
)
def test_what_is_no_whole_object_gives_nothing(raw: str) -> None:
    assert top_level_int(raw, KEY) is None


def _parses(raw: str) -> bool:
    try:
        orjson.loads(raw)
    except orjson.JSONDecodeError:
        return False
    return True


@pytest.mark.parametrize(
    "rest",
    [
        ',"a":tru}',
        ',"a":NaN}',
        ',"a":01}',
        ',"a":1.}',
        ',"a":-}',
        ',"a":1 2}',
        ',"a":"\\q"}',
        ',"a":"\\u12"}',
        ',"a":"\\ud800"}',
        ',"a":"\\udc00\\ud800"}',
        ',"a":"\x01"}',
        ',"a":"\x1f"}',
        ",}",
        ',"a":[1,]}',
        ',"a":[,1]}',
        ',"a":{"b"}}',
        ',"a":{"b":}}',
        ',"a":{"b" 1}}',
        ',"a":{1:2}}',
        ',"a":{{}}}',
        ',"a":[}]}',
        ',"a":[[]}}',
        ',"a":{"b":1]}',
        ',"a" "b"}',
        ',"a":1,:2}',
        ',"a":"b":1}',
        ',"a":\x0b1}',
        ',"a":\u00a01}',
        ',"a":1}\x0c',
        ',"a":1} x',
        ',"a":[]xyz}',
        ',"a":[]',
    ],
)
def test_what_a_parser_refuses_the_scan_refuses_however_deep(rest: str) -> None:
    shallow = '{"server_event_seq":15' + rest
    assert not _parses(shallow) and top_level_int(shallow, KEY) is None
    # past orjson's depth limit the parser stops reading, the scan goes on to the end
    deep = '{"server_event_seq":15,"b":' + DEEP + rest
    with pytest.raises(orjson.JSONDecodeError, match="depth limit exceeded"):
        orjson.loads(deep)
    assert top_level_int(deep, KEY) is None, "taken for an object with seq 15"


def test_mismatched_bracket_kinds_deep_in_a_run_are_refused() -> None:
    for inner in ("[" * 1100 + "}" * 1100, "[" * 1099 + "{" + "]" * 1100, "[" * 1100 + "]" * 1099):
        assert top_level_int('{"server_event_seq":15,"b":' + inner + "}", KEY) is None
    mixed = "[" * 600 + "{" + '"c":' + "[" * 600 + "]" * 600 + "}" + "]" * 600
    assert top_level_int('{"server_event_seq":15,"b":' + mixed + "}", KEY) == TopLevel(1202, 15)


class _CountedSteps:
    """The scan's token pattern, counting its matches: one a step."""

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.pattern, self.steps = pattern, 0

    def match(self, raw: str, pos: int) -> re.Match[str] | None:
        self.steps += 1
        return self.pattern.match(raw, pos)


def test_a_frame_past_the_step_budget_is_given_up_within_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    counted = _CountedSteps(scanner._TOKEN)
    monkeypatch.setattr(scanner, "_TOKEN", counted)
    # valid JSON a parser without a depth limit reads; each member is 4 tokens
    head = '{"server_event_seq":1,"x":' + "[" * 2000 + "]" * 2000
    within = head + ',"a":1' * (STEP_BUDGET // 4 - 10) + "}"
    assert top_level_int(within, KEY) == TopLevel(2001, 1)
    assert counted.steps <= STEP_BUDGET
    counted.steps = 0
    rigged = head + ',"a":1' * (16 * 2**20 // 6) + "}"  # 16 MiB, 11M tokens
    assert top_level_int(rigged, KEY) is None
    assert counted.steps <= STEP_BUDGET + 1, f"{counted.steps} steps"


def test_a_run_of_brackets_is_one_step_spaces_and_all(monkeypatch: pytest.MonkeyPatch) -> None:
    counted = _CountedSteps(scanner._TOKEN)
    monkeypatch.setattr(scanner, "_TOKEN", counted)
    raw = '{"server_event_seq":1,"a":' + "[ \n" * STEP_BUDGET * 2 + " ]" * STEP_BUDGET * 2 + "}"
    assert top_level_int(raw, KEY) == TopLevel(STEP_BUDGET * 2 + 1, 1)
    assert counted.steps < 20
