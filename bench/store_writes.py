"""Bytes written to Redis per second by one session with big instructions, streaming audio.

    uv run python bench/store_writes.py --instructions-kb 1024 --kind duplex-no-barge-in --json

A ``redis-server``, a reference backend and one proxy replica (``python -m proxy
serve``) with the Redis store, all on loopback. One client sets instructions of the
given size, waits until they are persisted, then streams a speech clip in real time
and reads the answer until ``response.done``. Reported: Redis ``INFO stats``
``total_net_input_bytes`` over that talking window (everything the proxy sent to
Redis, plus the few ``INFO`` calls of this script), per second and in total, and the
audio deltas received meanwhile. Every process started here is stopped on the way out.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import tempfile
import time
import wave
from pathlib import Path
from typing import Any

import aiohttp
import pybase64
import redis.asyncio as aioredis
from processes import proxy_replica, reference_backend, route, start_redis, stop_all

CORPUS = Path(__file__).resolve().parents[2] / "shared/corpus/dev"
CLIP = "utt05_clean.wav"
CHUNK_MS = 100
RATE = 24000


def pcm(name: str) -> bytes:
    with wave.open(str(CORPUS / name)) as w:
        return w.readframes(w.getnframes())


async def input_bytes(r: aioredis.Redis) -> int:
    stats: dict[str, Any] = await r.info("stats")
    return int(stats["total_net_input_bytes"])


async def run_session(ws_base: str, redis_url: str, instructions_kb: int) -> dict[str, Any]:
    r = aioredis.Redis.from_url(redis_url)
    audio = pcm(CLIP) + bytes(RATE * 2)  # a second of silence ends the turn
    chunk = RATE * 2 * CHUNK_MS // 1000
    async with aiohttp.ClientSession() as http:
        ws = await http.ws_connect(f"{ws_base}?model=m", max_msg_size=0)
        created = (await ws.receive_json())["session"]["id"]
        text = "Answer briefly. " * (instructions_kb * 1024 // 16)
        await ws.send_json({"type": "session.update", "session": {"instructions": text}})
        while (await ws.receive_json())["type"] != "session.updated":
            pass
        await asyncio.sleep(1.0)  # the instructions reach the store once
        start_bytes, t0 = await input_bytes(r), time.monotonic()
        for n in range(0, len(audio), chunk):
            b64 = pybase64.b64encode(audio[n : n + chunk]).decode()
            await ws.send_json({"type": "input_audio_buffer.append", "audio": b64})
            await asyncio.sleep(
                max(0.0, t0 + (n // chunk + 1) * CHUNK_MS / 1000 - time.monotonic())
            )
        deltas = 0
        while True:
            ev = await ws.receive_json(timeout=30)
            deltas += ev["type"] == "response.output_audio.delta"
            if ev["type"] == "response.done":
                break
        elapsed = time.monotonic() - t0
        written = await input_bytes(r) - start_bytes
        await ws.close()
    await r.aclose()
    return {
        "session_id": created,
        "instructions_bytes": len(text),
        "window_s": round(elapsed, 2),
        "audio_deltas": deltas,
        "redis_input_bytes": written,
        "redis_input_bytes_per_s": round(written / elapsed),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instructions-kb", type=int, default=1024)
    # Not "turn": a turn-based upstream refuses instructions (unsupported_by_upstream).
    ap.add_argument("--kind", default="duplex-no-barge-in", help="reference backend kind")
    ap.add_argument("--reply-ms", type=int, default=4000)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    env = {**os.environ, "DUPLEX_PROXY__SERVER__LOG_LEVEL": "warning"}
    procs: list[subprocess.Popen[bytes]] = []
    with tempfile.TemporaryDirectory(prefix="dxp-bench-") as tmp:
        try:
            proc, redis_url = start_redis()
            procs.append(proc)
            proc, upstream = reference_backend(args.kind, args.reply_ms, env)
            procs.append(proc)
            config = Path(tmp) / "proxy.toml"
            config.write_text(
                f'[auth]\nmode = "none"\n[store]\nurl = "{redis_url}"\n' + route("m", upstream)
            )
            proc, ws_base = proxy_replica(config, env)
            procs.append(proc)
            result = asyncio.run(run_session(ws_base, redis_url, args.instructions_kb))
        finally:
            stop_all(procs)
    result["kind"] = args.kind
    if args.json:
        print(json.dumps(result))
    else:
        for k, v in result.items():
            print(f"{k:>26}: {v}")


if __name__ == "__main__":
    main()
