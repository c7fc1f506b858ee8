"""A checkpoint tells whether a session's settings (``static``: megabytes of
instructions, perhaps) changed without dumping them (``proxy/persist/checkpoint.py``),
and still sees every change their JSON would show."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from proxy.persist import checkpoint
from proxy.persist.checkpoint import same_json, serialised
from proxy.store.base import SessionRecord


def record(static: dict[str, Any]) -> SessionRecord:
    return SessionRecord("sess_x", "h", "m", "barge_in_emulated", static=static)


def test_unchanged_settings_are_not_dumped_at_each_checkpoint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    instructions = "i" * 1_000_000
    before = serialised(record({"instructions": instructions, "upstream_update": {"a": 1}}))
    dumped: list[int] = []
    real = orjson.dumps
    monkeypatch.setattr(
        checkpoint.orjson, "dumps", lambda v: dumped.append(len(real(v))) or real(v)
    )
    # A new snapshot: new containers around the same strings.
    after = serialised(record({"instructions": instructions, "upstream_update": {"a": 1}}))
    assert max(dumped) < 1000, dumped
    assert after == before


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ({"instructions": "x" * 10}, {"instructions": "x" * 9 + "y"}),
        ({"u": {"t": 1}}, {"u": {"t": 1.0}}),
        ({"u": {"t": 1}}, {"u": {"t": True}}),
        ({"u": [1, 2]}, {"u": [1, 2, 3]}),
        ({"u": [1, 2]}, {"u": [2, 1]}),
        ({"u": None}, {"u": {}}),
        ({"u": {"a": 1}}, {"u": {"b": 1}}),
        ({"instructions": "x"}, {}),
    ],
)
def test_a_change_the_json_shows_is_a_change(a: dict[str, Any], b: dict[str, Any]) -> None:
    assert (orjson.dumps(a) == orjson.dumps(b)) is False
    assert not same_json(a, b) and not same_json(b, a)
    assert serialised(record(a)) != serialised(record(b))


def test_what_dumps_alike_is_alike() -> None:
    a = {"instructions": "x" * 10, "u": {"t": 0.5, "n": None, "l": [1, "s", {"k": False}]}}
    b = orjson.loads(orjson.dumps(a))
    assert same_json(a, b)
    assert same_json({"f": float("nan")}, {"f": float("nan")})  # null, both
    assert serialised(record(a)) == serialised(record(b))
