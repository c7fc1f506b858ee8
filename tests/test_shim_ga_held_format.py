"""Push-to-talk audio held from a duplex upstream goes on in the format it was sent in,
though the client declared another meanwhile (``shim/dialects/ga_append.py``): the
upstream reads each held append as the audio it was, however the session changed."""

from __future__ import annotations

from typing import Any

import numpy as np
import pybase64
import pytest

from shim.actions import Action, SendUpstream
from shim.audio import AudioFormat, decode_samples
from shim.audio_formats import parse_format
from tests.shim_ga_relay_script import make
from tests.shim_ga_turn_steps import done, pressed_over
from tests.shim_script import Script

PCM24 = {"type": "audio/pcm", "rate": 24000}
PCMU = {"type": "audio/pcmu"}


def declare(sc: Script, fmt: dict[str, Any]) -> list[Action]:
    return sc.client({"type": "session.update", "session": {"audio": {"input": {"format": fmt}}}})


def appends(sc: Script, fmt: AudioFormat, n: int) -> list[Action]:
    """``n`` appends of 32 ms of a 140 Hz tone in ``fmt``."""
    from shim.audio import encode_samples

    out: list[Action] = []
    for _ in range(n):
        t = np.arange(fmt.rate_hz * 32 // 1000) / fmt.rate_hz
        wave = (np.sin(2 * np.pi * 140 * t) * 4000).astype(np.int16)
        audio = pybase64.b64encode(encode_samples(wave, fmt)).decode()
        out += sc.client({"type": "input_audio_buffer.append", "audio": audio})
    return out


def heard_ms(actions: list[Action]) -> list[float]:
    """Each append's length as the upstream reads it: by its own format and rate, else
    the format the proxy last declared to it."""
    declared = AudioFormat()
    lengths = []
    for a in actions:
        if not isinstance(a, SendUpstream):
            continue
        ev = a.event
        if ev["type"] == "session.update":
            s = ev["session"]
            declared = parse_format(s["input_audio_format"], s["sample_rate_hz"], "f", True)
        elif ev["type"] == "input_audio_buffer.append":
            fmt = declared
            if "sample_rate_hz" in ev or "format" in ev:
                name = ev.get("format", declared.encoding)
                fmt = parse_format(name, ev.get("sample_rate_hz", declared.rate_hz), "f", True)
            data = pybase64.b64decode(ev["audio"])
            lengths.append(decode_samples(data, fmt).size * 1000 / fmt.rate_hz)
    return lengths


@pytest.mark.parametrize(("before", "after"), [(PCM24, PCMU), (PCMU, PCM24)])
def test_held_push_to_talk_audio_keeps_the_format_it_was_sent_in(
    before: dict[str, Any], after: dict[str, Any]
) -> None:
    sc = make()
    declare(sc, before)
    pressed_over(sc)  # push-to-talk, an answer in progress: the microphone is held
    out = appends(sc, parse_format(before, None, "f", True), 5)
    out += declare(sc, after)
    out += sc.client({"type": "input_audio_buffer.commit"})
    out += done(sc)
    assert heard_ms(out) == pytest.approx([32.0] * 5, abs=0.5)
