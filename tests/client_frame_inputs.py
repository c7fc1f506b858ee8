"""The inputs the tests of a client frame's cut-down checks run through both the checks and
their full references (tests/test_client_frame_*.py): the hypothesis settings, the depth
and value limits tried, the crafted frames, and any JSON value as a strategy."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

PROPS = settings(
    max_examples=400,
    deadline=None,
    derandomize="HYPOTHESIS_HUNT" not in os.environ,
    suppress_health_check=[HealthCheck.too_slow],
)
LIMITS = [(64, 50_000), (0, 0), (1, 1), (2, 3), (3, 2)]


AUDIO = "AAAA" * 320
CRAFTED = [
    f'{{"type":"input_audio_buffer.append","audio":"{AUDIO}"}}',
    f'{{"type":"input_audio_buffer.append","event_id":"e1","audio":"{AUDIO}"}}',
    f' \t\r\n{{"type" : "input_audio_buffer.append" ,\n"audio":"{AUDIO}"}}  ',
    '{"type":"input_audio_buffer.append","audio":"AB==","audio":"ABCD"}',  # duplicate keys
    '{"type":"x","type":"input_audio_buffer.append","audio":"ABC="}',
    '{"type":"input_audio_buffer.append","audio":"{[{["}',  # brackets inside a string
    '{"type":"a\\u007b\\u005b","audio":"x"}',  # escaped brackets
    '{"type":"\\"{","audio":"]"}',
    '{"type":"input_audio_buffer.append","audio":["AAAA"]}',
    '{"type":"input_audio_buffer.append","audio":{"a":{"b":1}}}',
    '{"type":"t","v":[]}',
    '{"type":"t","v":{}}',
    '{"type":"t","a":1,"b":2,"c":3}',
    '{"type":""}',
    '{"type":5}',
    "{}",
    '{"a":[1,2,3]}',
    "[]",
    "[1,2]",
    '[{"type":"x"}]',
    '"{"',
    '"x"',
    "5",
    "null",
    "true",
    "",
    " ",
    "{",
    "}",
    "[",
    '{"type":"x"',
    '{"type":"x"}}',
    '{"type":"x"} {"type":"y"}',
    '{"type":"x",}',
    "{'type':'x'}",
    '{"type":"x\u0000"}',
    '{"type":"x\x01"}',
    '{"type":"\ud800"}',
    '{"type":"x","n":NaN}',
    '{"type":"x","n":1e999}',
    "\ufeff" + '{"type":"x"}',
    '{"type":"c","item":' + '{"a":' * 70 + "1" + "}" * 70 + "}",
    '{"type":"c","item":' + "[" * 300 + "]" * 300 + "}",
    "[" * 2000 + "]" * 2000,
    '{"type":"c","v":' + "[" + ",".join(["1"] * 100) + "]}",
    '{"type":"c",' + ",".join(f'"k{i}":{i}' for i in range(60)) + "}",
]


INT = st.integers(min_value=-(2**63), max_value=2**63 - 1)
SCALARS = st.none() | st.booleans() | INT | st.floats(allow_nan=False) | st.text(max_size=8)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=20,
)
