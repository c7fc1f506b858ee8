"""A client frame's bytes, read as they came (``parse_flat_ascii``), give an event only
where the text's full checks (``parse_client_frame``) give that same event.

The raw path of ``proxy/client_made.py`` relays a frame on its bytes' event; any frame
it gives none for goes the text's way. So for every ASCII input, crafted or
generated, under every limit: either no event, or the text's ``ClientFrame`` with an
equal event; and a plain audio append (the frame the path is for) gives its event.
"""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import given
from hypothesis import strategies as st

from proxy.client_frames import ClientFrame, parse_client_frame, parse_flat_ascii
from tests.client_frame_inputs import CRAFTED, LIMITS, PROPS, VALUES

APPEND = '{"type":"input_audio_buffer.append","t":1.5,"audio":"' + "A" * 1280 + '"}'


def agrees(raw: str) -> None:
    if not raw.isascii():
        return  # (the raw path leaves a frame that is not ASCII to the text's)
    event = parse_flat_ascii(bytearray(raw.encode()))
    if event is None:
        return
    for max_depth, max_values in LIMITS:
        frame = parse_client_frame(raw, max_depth, max_values)
        assert isinstance(frame, ClientFrame), (raw[:80], max_depth, max_values, frame)
        assert frame.event == event


def test_crafted_frames() -> None:
    for raw in CRAFTED:
        agrees(raw)


def test_an_append_and_its_id_are_read_from_its_bytes() -> None:
    for raw in (APPEND, APPEND.replace('"t"', '"event_id":"e1","t"')):
        assert parse_flat_ascii(bytearray(raw.encode())) == orjson.loads(raw)
        agrees(raw)


@PROPS
@given(value=VALUES, pad=st.sampled_from(["", " ", "\n\t"]))
def test_any_json_value(value: Any, pad: str) -> None:
    raw = orjson.dumps(value).decode()
    agrees(pad + raw + pad)
    if isinstance(value, dict):
        agrees(orjson.dumps({"type": "t", **value}).decode())


@PROPS
@given(text=st.text(alphabet=st.sampled_from('{}[]",: \\tx1e.-'), max_size=40))
def test_any_text_of_json_punctuation(text: str) -> None:
    agrees(text)
