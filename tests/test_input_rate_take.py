"""``InputRate.take``, the client frame's one call (proxy/client_limits.py), charges
what ``charge`` of the event's ``cost`` charges and says OK when it does; when it
would not be OK it charges nothing, and ``charge`` then gives the verdict as before."""

from __future__ import annotations

import random

import pybase64

from proxy.client_limits import AUDIO_BYTES_PER_S, InputRate, Rate


def append(n_bytes: int, **extra: object) -> dict[str, object]:
    audio = pybase64.b64encode(b"\x01" * n_bytes).decode()
    return {"type": "input_audio_buffer.append", "audio": audio, **extra}


EVENTS = [
    append(960),  # 20 ms at 24 kHz PCM16
    append(9600),
    append(48000),
    append(320, format="pcm16", sample_rate_hz=8000),  # its own format
    append(160, format="g711_ulaw"),
    append(100, format="nonsense"),  # refused by the session; counted as it came
    {"type": "input_audio_buffer.commit"},
    {"type": "input_audio_buffer.append", "audio": 5},
    append(0),
]


def test_take_is_charge_of_cost_when_it_fits() -> None:
    rng = random.Random(3)
    for native in (False, True):
        took = InputRate(1.5, 0.5, 2.0, now=0.0)
        charged = InputRate(1.5, 0.5, 2.0, now=0.0)
        took.clock.for_client(native)
        charged.clock.for_client(native)
        now, said = 0.0, {True: 0, False: 0}
        for _ in range(4000):
            now += rng.choice((0.0, 0.001, 0.02, 0.2))
            event = rng.choice(EVENTS)
            ok = took.take(event, now)
            said[ok] += 1
            if not ok:  # the reader's path over the allowance
                verdict = took.charge(took.cost(event), now)
                assert verdict.rate is not Rate.OK
            expected = charged.charge(charged.cost(event), now)
            assert (expected.rate is Rate.OK) is ok
            assert (took.tokens, took.last, took.over_since) == (
                charged.tokens,
                charged.last,
                charged.over_since,
            )
        assert said[True] and said[False], said  # both paths were taken


def test_a_refused_take_charges_nothing() -> None:
    rate = InputRate(1.0, 0.1, 2.0, now=0.0)
    assert rate.take(append(AUDIO_BYTES_PER_S // 20), now=0.0)  # 50 ms of a 100 ms burst
    before = (rate.tokens, rate.last, rate.over_since)
    assert not rate.take(append(AUDIO_BYTES_PER_S), now=0.0)  # a second: over
    assert (rate.tokens, rate.last, rate.over_since) == before
