"""The scan that reads one top-level integer of a JSON object too deep to parse
(proxy/json_top_level.py): only the top level counts, strings are skipped whole."""

from __future__ import annotations

import orjson
import pytest

from proxy.json_top_level import TopLevel, top_level_int

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
