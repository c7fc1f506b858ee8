"""What the shim's state machines (tests/shim_machine.py) draw from, and how long they run:
the hypothesis settings, the strategies for probabilities, time steps, item references
and ``session.update`` bodies, and the audio they send."""

from __future__ import annotations

import os

import numpy as np
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st

from shim.audio import b64encode

# Bounded for every run (seconds), and the same examples every run, so CI never flakes.
# A hunt explores afresh: HYPOTHESIS_HUNT=1 (or STATEFUL_EXAMPLES=2000 STATEFUL_STEPS=150),
# with -o timeout=0, and NOSHRINK=1 to see failures without waiting for shrinking.
RUNS = settings(
    derandomize=not {"STATEFUL_EXAMPLES", "HYPOTHESIS_HUNT"} & set(os.environ),
    phases=[Phase.explicit, Phase.reuse, Phase.generate]
    if os.environ.get("NOSHRINK")
    else list(Phase),
    max_examples=int(os.environ.get("STATEFUL_EXAMPLES", "150")),
    stateful_step_count=int(os.environ.get("STATEFUL_STEPS", "50")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
WINDOW = 512  # 16 kHz samples per VAD window (32 ms)
SID = "sess_0123456789abcdef"

probs = st.sampled_from([0.0, 0.05, 0.3, 0.45, 0.55, 0.9, 1.0]) | st.floats(0.0, 1.0)
steps_ms = st.sampled_from([0, 5, 20, 100]) | st.integers(0, 400)
item_refs = st.sampled_from(["known", "unknown", "missing"])


def pcm(ms: int, rate: int, amplitude: int = 3000) -> str:
    n = rate * ms // 1000
    t = np.arange(n) / rate
    return b64encode((np.sin(2 * np.pi * 220 * t) * amplitude).astype("<i2").tobytes())


session_updates = st.sampled_from(
    [
        {"session": {"instructions": "be brief"}},
        {"session": {"audio": {"input": {"turn_detection": {"type": "server_vad"}}}}},
        {
            "session": {
                "audio": {
                    "input": {
                        "turn_detection": {
                            "type": "server_vad",
                            "silence_duration_ms": 200,
                            "create_response": False,
                        }
                    }
                }
            }
        },
        {"session": {"audio": {"input": {"turn_detection": {"interrupt_response": False}}}}},
        {"session": {"audio": {"input": {"format": {"type": "audio/pcm", "rate": 16000}}}}},
        {"session": {"audio": {"output": {"format": {"type": "audio/pcm", "rate": 16000}}}}},
        {"session": {"audio": {"input": {"format": {"type": "pcm_f32le", "rate": 24000}}}}},
        {"session": {"audio": {"input": {"format": {"type": "audio/pcm", "rate": 24000}}}}},
        {"session": {"audio": {"input": {"format": {"type": "audio/x", "rate": 1}}}}},
        {"session": {"turn_detection": {"threshold": 2}}},
    ]
)


PUSH_TO_TALK = {"session": {"audio": {"input": {"turn_detection": None}}}}
# Windows of low speech probability in a row after which no user speech can still be
# under way (longer than any silence_duration_ms the updates above set).
QUIET_WINDOWS = 40
