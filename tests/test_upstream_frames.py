"""An upstream text frame as the emulated modes hand it to the shim
(proxy/emulated/upstream_frames.py): an event nested too deeply is dropped, but keeps
its place in the upstream's journal, however deep it is (orjson parses 1024 levels)."""

from __future__ import annotations

import orjson
import pytest

from proxy.config import config_from_dict
from proxy.emulated.upstream_frames import upstream_input
from proxy.logging import get_logger
from proxy.state import ProxyState
from shim.actions import AbortUpstream, ResumeUpstream
from tests.duplex_relay_script import AID, RID, make, relay, start_response
from tests.shim_script import client_events


def _state() -> ProxyState:
    cfg = config_from_dict(
        {
            "routes": [{"model": "m", "upstream": "ws://127.0.0.1:9/v1/realtime"}],
            "auth": {"mode": "none"},
        }
    )
    return ProxyState(config=cfg)


def _deep(depth: int, seq: str) -> str:
    return (
        f'{{"type":"rate_limits.updated","server_event_seq":{seq},"rate_limits":'
        + "[" * depth
        + "]" * depth
        + "}"
    )


@pytest.mark.parametrize("depth", [300, 1100])
def test_a_deep_upstream_event_keeps_its_seq(depth: int) -> None:
    inp = upstream_input(_deep(depth, "15"), _state(), get_logger())
    assert inp is not None and inp.skipped, f"{depth} deep: its seq 15 was dropped with it"
    assert inp.event == {"server_event_seq": 15}


@pytest.mark.parametrize("depth", [300, 1100])
@pytest.mark.parametrize("seq", ['"15"', "15.0", "null"])
def test_a_deep_upstream_event_without_an_integer_seq_is_dropped_whole(
    depth: int, seq: str
) -> None:
    assert upstream_input(_deep(depth, seq), _state(), get_logger()) is None


DEEP = "[" * 1100 + "]" * 1100


@pytest.mark.parametrize(
    "raw",
    [
        '{"server_event_seq":15,"a":tru}',
        '{"server_event_seq":15,"a":[' + "[" * 1100,
        '{"server_event_seq":15,"a":tru,"b":' + DEEP + "}",
        '{"server_event_seq":15,"a":NaN,"b":' + DEEP + "}",
        '{"server_event_seq":15,"b":' + DEEP + ",}",
        '{"server_event_seq":15,"b":' + DEEP + "xyz}",
        '{"server_event_seq":15,"a":"\\q","b":' + DEEP + "}",
        '{"server_event_seq":15,"b":' + "[" * 1100 + "}" * 1100 + "}",
        '{"server_event_seq":15,7:' + DEEP + "}",
        # not past orjson's depth limit, refused for its syntax alone
        '{"server_event_seq":15,"a":tru,"b":' + "[" * 100 + "]" * 100 + "}",
    ],
)
def test_a_malformed_upstream_frame_gives_nothing(raw: str) -> None:
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(raw)
    assert upstream_input(raw, _state(), get_logger()) is None, "taken for event 15"


@pytest.mark.parametrize("depth", [300, 1100])
def test_the_event_after_a_deep_one_is_no_gap(depth: int) -> None:
    sc = make()
    start_response(sc, chunks=2)  # upstream seqs 10..14
    inp = upstream_input(_deep(depth, "15"), _state(), get_logger())
    if inp is not None:
        assert sc.s.handle(inp) == []
    out = sc.upstream(
        {"type": "response.output_audio_transcript.delta", "response_id": RID, "delta": "x"}
        | {"item_id": AID, "server_event_seq": 16}
    )
    assert not any(isinstance(a, (AbortUpstream, ResumeUpstream)) for a in out), (
        f"{depth} deep: seq 16 taken for a gap, upstream session given up: {out}"
    )
    assert [e["type"] for e in client_events(out)] == ["response.output_audio_transcript.delta"]
    assert relay(sc).link.seq == 16
