"""What holding ``response.done`` until the store has it costs (``proxy/emulated/held_ends.py``).

    uv run python bench/done_hold.py --turns 10 --json

A ``redis-server``, a duplex reference backend and two proxy replicas (``python -m
proxy serve``, one worker each): one with the Redis store (the end waits for its
checkpoint), one with the memory store (nothing to wait for). One push-to-talk client
per replica; their turns alternate, so both see the same machine load. Reported per
replica: the delay between the event just before each ``response.done`` and the
``response.done`` itself as the client receives them (median and max, ms), and the
redis replica's ``duplex_proxy_response_ends_unsaved_total``. The difference of the
medians is the hold; absolute figures move with the machine's load.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import pybase64
from processes import proxy_replica, read_clip, reference_backend, route, start_redis, stop_all

CORPUS = Path(__file__).resolve().parents[2] / "shared/corpus/dev"
CLIP = "utt05_clean.wav"
PTT = {
    "type": "session.update",
    "session": {
        "type": "realtime",
        "audio": {
            "input": {"format": {"type": "audio/pcm", "rate": 24000}, "turn_detection": None}
        },
    },
}


class Talker:
    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws
        self.gaps_ms: list[float] = []

    async def turn(self, audio: bytes) -> None:
        for n in range(0, len(audio), 9600):
            b64 = pybase64.b64encode(audio[n : n + 9600]).decode()
            await self.ws.send_json({"type": "input_audio_buffer.append", "audio": b64})
        await self.ws.send_json({"type": "input_audio_buffer.commit"})
        await self.ws.send_json({"type": "response.create"})
        before = time.monotonic()
        while True:
            ev = await self.ws.receive_json(timeout=30)
            now = time.monotonic()
            if ev["type"] == "response.done":
                self.gaps_ms.append((now - before) * 1000)
                return
            before = now


async def unsaved(http: aiohttp.ClientSession, ws_url: str) -> float:
    base = ws_url.replace("ws://", "http://").rsplit("/v1/", 1)[0]
    async with http.get(base + "/metrics") as resp:
        text = await resp.text()
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("duplex_proxy_response_ends_unsaved_total{")
    )


async def run(urls: dict[str, str], turns: int) -> dict[str, Any]:
    audio = read_clip(CORPUS / CLIP)
    async with aiohttp.ClientSession() as http:
        talkers: dict[str, Talker] = {}
        for name, url in urls.items():
            ws = await http.ws_connect(f"{url}?model=m", max_msg_size=0)
            await ws.receive_json()  # session.created
            await ws.send_json(PTT)
            while (await ws.receive_json())["type"] != "session.updated":
                pass
            talkers[name] = Talker(ws)
        for _ in range(turns):
            for talker in talkers.values():
                await talker.turn(audio)
        result: dict[str, Any] = {}
        for name, talker in talkers.items():
            await talker.ws.close()
            result[name] = {
                "done_gap_ms_median": round(statistics.median(talker.gaps_ms), 2),
                "done_gap_ms_max": round(max(talker.gaps_ms), 2),
                "ends_unsaved": await unsaved(http, urls[name]),
            }
    result["hold_ms_median"] = round(
        result["redis"]["done_gap_ms_median"] - result["memory"]["done_gap_ms_median"], 2
    )
    result["turns"] = turns
    result["load_average"] = os.getloadavg()
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=10)
    ap.add_argument("--reply-ms", type=int, default=1000)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    env = {**os.environ, "DUPLEX_PROXY__SERVER__LOG_LEVEL": "warning"}
    procs: list[subprocess.Popen[bytes]] = []
    with tempfile.TemporaryDirectory(prefix="dxp-bench-") as tmp:
        try:
            proc, redis_url = start_redis()
            procs.append(proc)
            proc, upstream = reference_backend("duplex", args.reply_ms, env)
            procs.append(proc)
            urls: dict[str, str] = {}
            for name, store in (("redis", redis_url), ("memory", "memory://")):
                config = Path(tmp) / f"{name}.toml"
                config.write_text(
                    f'[auth]\nmode = "none"\n[store]\nurl = "{store}"\n' + route("m", upstream)
                )
                proc, urls[name] = proxy_replica(config, env)
                procs.append(proc)
            result = asyncio.run(run(urls, args.turns))
        finally:
            stop_all(procs)
    if args.json:
        print(json.dumps(result))
    else:
        for k, v in result.items():
            print(f"{k:>16}: {v}")


if __name__ == "__main__":
    main()
