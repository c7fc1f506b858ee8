"""CPU of the shim alone per session-second of audio: no sockets, no asyncio, no Silero.

    uv run python bench/shim_cost.py --json
    uv run python bench/shim_cost.py --root OTHER_CHECKOUT --json   # another version

Replays the duplex_emulated conversation of ``tests/test_shim_cost_paths.py`` (dev-corpus
turns, answers whose echo comes back into the microphone, the user talking over an
answer; real Silero scores the windows) and times only ``EmulatedSession.handle`` with
the process's CPU clock; ``--no-echo`` plays the answers with no echo (a client with
echo cancellation, or the clients of ``bench/sessions.py``). The figure is CPU, not
wall time, so it holds up on a busy machine better than the load benchmarks; the
median of ``--runs`` is reported. ``--root`` runs the shim (and proxy) of another
checkout under the same replay, to compare versions side by side.

The replay feeds 16 kHz, so a 24 kHz client's resampling to the VAD's rate is timed on
its own: ``mic_resample_us_per_append``, CPU per 20 ms append of 24 kHz noise through
the microphone's low-delay resampler and through soxr's streaming one; and the echo
suppressor's alone while nothing plays: ``echo_idle_us_per_append``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def measure(runs: int, echo: bool) -> dict[str, Any]:
    # The replay comes from this checkout, the shim it drives from the import path.
    spec = importlib.util.spec_from_file_location(
        "shim_cost_replay", ROOT / "tests" / "test_shim_cost_paths.py"
    )
    assert spec is not None and spec.loader is not None
    replay = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(replay)

    if not echo:
        replay.ECHO_GAIN = 0.0
    spent = [0.0]
    handle = replay.TurnBasedSession.handle

    def timed(self: Any, inp: Any) -> Any:
        t0 = time.process_time()
        try:
            return handle(self, inp)
        finally:
            spent[0] += time.process_time() - t0

    replay.TurnBasedSession.handle = timed  # type: ignore[method-assign]
    audio_s = replay.scenario().size / replay.RATE
    per_run = []
    for _ in range(runs):
        spent[0] = 0.0
        replay.conversation(full=False)
        per_run.append(1000 * spent[0] / audio_s)
    import shim

    return {
        "shim_from": str(Path(shim.__file__).resolve().parent.parent.name),
        "echo": echo,
        "audio_s": round(audio_s, 1),
        "shim_cpu_ms_per_session_s": round(statistics.median(per_run), 2),
        "runs": [round(r, 2) for r in per_run],
    }


def resample_cost(appends: int = 3000) -> dict[str, float]:
    """CPU µs per 20 ms append of 24 kHz audio resampled to 16 kHz, by resampler."""
    import numpy as np

    from shim.audio import StreamResampler

    kinds: dict[str, Any] = {"soxr_stream": StreamResampler}
    try:
        from shim.resample_low_delay import LowDelayResampler

        kinds["low_delay"] = LowDelayResampler
    except ImportError:  # a checkout from before it
        pass
    x = np.random.default_rng(0).normal(0, 3000, 480 * appends).astype(np.int16)
    out: dict[str, float] = {}
    for name, kind in kinds.items():
        r = kind(24000, 16000)
        t0 = time.process_time()
        for i in range(appends):
            r.process(x[i * 480 : (i + 1) * 480])
        out[name] = round(1e6 * (time.process_time() - t0) / appends, 1)
    return out


def echo_idle_cost(appends: int = 10000, runs: int = 5) -> float:
    """CPU µs per 20 ms append through the echo suppressor while nothing plays (most
    of a session: it passes the microphone through its STFT frames), median of runs."""
    import numpy as np

    from shim.echo import EchoSuppressor

    x = np.random.default_rng(1).normal(0, 0.1, 320).astype(np.float32)
    per_run = []
    for _ in range(runs):
        echo = EchoSuppressor()
        t0 = time.process_time()
        for i in range(appends):
            echo.process_scaled(x, i * 320)
        per_run.append(1e6 * (time.process_time() - t0) / appends)
    return round(statistics.median(per_run), 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, help="time the shim of this checkout instead")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--no-echo", action="store_true", help="answers with no echo")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.root is not None and args.root.resolve() != ROOT:
        argv = [sys.executable, __file__, "--runs", str(args.runs), "--json"]
        argv += ["--no-echo"] if args.no_echo else []
        env = {**os.environ, "PYTHONPATH": str(args.root.resolve())}
        out = subprocess.run(argv, env=env, cwd=args.root, check=True, capture_output=True)
        result = json.loads(out.stdout)
    else:
        result = measure(args.runs, not args.no_echo)
        result["mic_resample_us_per_append"] = resample_cost()
        result["echo_idle_us_per_append"] = echo_idle_cost()
    result["load_average"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(result) if args.json else result)


if __name__ == "__main__":
    main()
