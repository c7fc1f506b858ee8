"""CPU of the relay's own Python work per passthrough frame, in one process: no sockets.

    uv run python bench/frame_cost.py --json
    uv run python bench/frame_cost.py --root OTHER_CHECKOUT --rounds 5 --json   # side by side

Times, with the process's CPU clock, what the passthrough relay runs in Python for each
frame besides aiohttp and the socket writes (``proxy/client_io.py``,
``proxy/passthrough/relay.py``), on the frames of ``bench/relay.py`` (a 20 ms audio
append up, its echo as an audio delta down):

* ``take_us``: a client frame's ``ClientChannel._take`` with a sink that takes it (the
  size, JSON, depth and value checks, the audio allowance, the idle clock, the frame
  counters);
* ``parse_us`` / ``allowance_us``: its ``parse_client_frame`` / ``InputRate.take`` alone;
* ``told_us``: an upstream frame's look for a session event (``InputClock.told``).

Each figure is the least of ``--repeats`` timings of ``--number`` calls: on a busy
machine the least is the one least disturbed. ``--root`` times another checkout's code
the same way in a subprocess, alternated with this one ``--rounds`` times (least of
all rounds each), so that both see the same machine. The relay's CPU through real
sockets is ``bench/relay.py``'s.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
AUDIO_B64 = "A" * 1280  # 20 ms of 24 kHz PCM16, as bench/relay.py sends it
APPEND = f'{{"type":"input_audio_buffer.append","t":12345.678901,"audio":"{AUDIO_B64}"}}'
DELTA = APPEND.replace("input_audio_buffer.append", "response.output_audio.delta")


def least_us(fn: Callable[[], object], number: int, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.process_time()
        for _ in range(number):
            fn()
        best = min(best, time.process_time() - t0)
    return best / number * 1e6


class _Socket:
    closed = False


async def measure(number: int, repeats: int) -> dict[str, float]:
    from proxy.client_frames import parse_client_frame
    from proxy.client_io import ClientChannel
    from proxy.metrics import Metrics

    channel = ClientChannel(_Socket(), Metrics(), 64, 64, 1 << 20)  # type: ignore[arg-type]
    rate = channel.rate
    rate.rate = rate.burst = rate.tokens = 1e18  # never over the allowance here

    async def sink(frame: Any) -> None:  # the relay's queued path: not taken here
        pass

    taken: list[object] = []
    channel.sink, channel.sink_now = sink, (lambda text: True, taken.append)
    assert channel._take(APPEND) and taken, "the frame was not taken"
    event = parse_client_frame(APPEND).event  # type: ignore[union-attr]

    def take() -> None:
        channel._take(APPEND)
        taken.clear()

    limits = (channel.limits.max_json_depth, channel.limits.max_json_values)
    return {
        "take_us": least_us(take, number, repeats),
        "parse_us": least_us(lambda: parse_client_frame(APPEND, *limits), number, repeats),
        "allowance_us": least_us(lambda: rate.take(event, 1.0), number, repeats),
        "told_us": least_us(lambda: rate.clock.told(DELTA), number, repeats),
    }


def run_root(root: Path, number: int, repeats: int) -> dict[str, float]:
    argv = [sys.executable, __file__, "--number", str(number), "--repeats", str(repeats)]
    env = {**os.environ, "PYTHONPATH": str(root)}
    out = subprocess.run([*argv, "--json"], env=env, cwd=root, check=True, capture_output=True)
    result: dict[str, float] = json.loads(out.stdout)["this"]
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, help="also time this checkout's code, alternated")
    ap.add_argument("--rounds", type=int, default=3, help="alternations with --root")
    ap.add_argument("--number", type=int, default=20_000)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--smoke", action="store_true", help="a few calls: does it work")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.smoke:
        args.number, args.repeats, args.rounds = 200, 2, 1
    out: dict[str, Any] = {}
    if args.root is None:
        out["this"] = asyncio.run(measure(args.number, args.repeats))
    else:
        root = args.root.resolve()
        runs: dict[str, list[dict[str, float]]] = {"this": [], "root": []}
        for _ in range(args.rounds):
            runs["this"].append(run_root(ROOT, args.number, args.repeats))
            runs["root"].append(run_root(root, args.number, args.repeats))
        for name, got in runs.items():
            out[name] = {key: min(run[key] for run in got) for key in got[0]}
    for name in out:
        out[name] = {key: round(value, 3) for key, value in out[name].items()}
    out["load_average"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(out) if args.json else out)


if __name__ == "__main__":
    main()
