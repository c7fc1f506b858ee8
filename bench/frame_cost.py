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
* ``told_us``: an upstream frame's look for a session event (``InputClock.told``);
* ``up_path_us`` / ``down_path_us``: a frame's whole way through the relay's code from
  the socket's bytes (as aiohttp's protocol hands them over) to the other socket's
  transport (a null one): aiohttp's parser, the tap and the checks, and the frame
  writer, or, where the checkout has ``proxy/ws_raw.py``, the frame taken as it came
  (the relay's own closures are stood in for by their few lines; no system call).

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


class _Transport:
    def write(self, data: object) -> None:
        pass

    def is_closing(self) -> bool:
        return False

    def get_write_buffer_size(self) -> int:
        return 0


class _Protocol:
    _reading_paused = False

    def pause_reading(self) -> None:
        self._reading_paused = True

    def resume_reading(self) -> None:
        self._reading_paused = False


def _frame(payload: bytes, masked: bool) -> bytes:
    """A text frame as a client (masked) or an upstream sends it (16-bit length)."""
    head = bytes([0x81, (0x80 if masked else 0) | 126]) + len(payload).to_bytes(2, "big")
    if not masked:
        return head + payload
    key = os.urandom(4)
    return head + key + bytes(b ^ key[i % 4] for i, b in enumerate(payload))


def _paths(loop: asyncio.AbstractEventLoop) -> tuple[Callable[[], bool], Callable[[], bool]]:
    """One client frame up and one upstream frame down, from bytes to a transport."""
    from aiohttp._websocket.writer import WebSocketWriter

    from proxy import ws_direct
    from proxy.client_io import ClientChannel
    from proxy.metrics import Metrics

    try:
        from proxy.client_made import made_taker
        from proxy.ws_raw import RawSplit
    except ImportError:  # a checkout before them
        made_taker = RawSplit = None  # type: ignore[assignment,misc]

    def socket(use_mask: bool) -> Any:
        ws = _Socket()
        ws._writer = WebSocketWriter(_Protocol(), _Transport(), use_mask=use_mask)  # type: ignore[attr-defined,arg-type]
        return ws

    def feeder(masked: bool) -> tuple[Any, Any]:
        queue = ws_direct.TapQueue(_Protocol(), 2**16, loop=loop)
        parser = ws_direct._Parser(queue, 2**20, compress=False, decode_text=True)
        return queue, (RawSplit(parser, queue, masked) if RawSplit is not None else parser)

    up_ws, client_ws = socket(True), socket(False)
    up_text = ws_direct.text_writer(up_ws)
    channel = ClientChannel(client_ws, Metrics(), 64, 64, 1 << 20, transport=_Transport())  # type: ignore[arg-type]
    rate = channel.rate
    rate.rate = rate.burst = rate.tokens = 1e18
    assert up_text is not None

    async def sink(frame: Any) -> None:
        pass

    channel.sink, channel.sink_now = sink, (lambda text: True, lambda f: up_text(f.raw))
    up_queue, up_feed = feeder(masked=True)
    up_made = None
    if made_taker is not None:
        up_write = ws_direct.payload_writer(up_ws)
        assert up_write is not None
        channel.sink_made = (lambda n: True, lambda event, payload: up_write(payload))
        up_made = made_taker(channel)
    up_bytes = _frame(APPEND.encode(), masked=True)

    def up() -> bool:
        up_queue.tap, up_queue.raw = channel._take, up_made
        up_feed.feed_data(up_bytes)
        return not up_queue._buffer

    told, tally = rate.clock.told, channel._tally_in.add

    def direct(text: str) -> bool:  # relay.py's, for a text frame
        if not channel.write_now(text):
            return False
        told(text)
        tally(len(text))
        return True

    def direct_made(frame: bytes, head: int) -> bool:  # relay.py's, for a frame as it came
        text = frame[head:]
        if not text.isascii() or text.find(b'"session.', 0, 256) >= 0:
            return False
        if not channel.write_frame_now(frame):
            return False
        tally(len(text))
        return True

    down_queue, down_feed = feeder(masked=False)
    down_bytes = _frame(DELTA.encode(), masked=False)

    def down() -> bool:
        down_queue.tap, down_queue.raw = direct, direct_made if RawSplit is not None else None
        down_feed.feed_data(down_bytes)
        return not down_queue._buffer

    return up, down


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
    up, down = _paths(asyncio.get_running_loop())
    assert up() and down(), "a path did not take its frame"
    return {
        "up_path_us": least_us(up, number, repeats),
        "down_path_us": least_us(down, number, repeats),
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
