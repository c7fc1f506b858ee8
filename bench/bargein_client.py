"""One barge-in case through the proxy as a GA client, at real-time pace.

The client asks the question, plays the answer on a real-time clock (``Speaker``),
plays the case's clip into the microphone one second into it (with the answer's echo
for the echo cases), and on ``speech_started`` during the answer flushes its playback
and truncates at the played position, as GA clients do. Its ``Outcome``: whether it was
interrupted and the answer cut, detection and stop delays from the labelled onset, how
far its microphone fell behind (``bench/bargein.py`` runs the cases).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import numpy as np
import pybase64
from bargein_cases import RATE, Case
from bargein_speaker import Speaker

CHUNK_MS = 20
CHUNK = RATE * CHUNK_MS // 1000
PLAY_AFTER_MS = 1000  # the clip starts this far into the assistant's answer
# A case over which the proxy's threads ran or waited for a CPU (ready to run, the machine
# busy with other work) this share of the time or more is reported as starved: its event
# loop was hardly ever idle, so its sessions were falling behind real time.
STARVED_BUSY = 0.9
OVERLAP_EVENTS = os.environ.get("BARGEIN_OVERLAP_EVENTS") == "1"  # record paused/resumed


@dataclass
class Outcome:
    case: Case
    decision_ms: int | None = None
    interrupted: bool = False  # speech_started while the answer played (client-visible)
    barged: bool = False
    detect_ms: float | None = None
    stop_ms: float | None = None
    error: str | None = None
    notes: list[str] = field(default_factory=list)
    # How far behind real time the client's microphone went out at worst: a late
    # microphone carries the answer's echo late (no real client's does), so a case
    # whose client fell behind (over ``LATE_MS``) does not measure the proxy.
    late_ms: float = 0.0
    # The proxy process over the case's span, per second of it: ms its threads ran on a
    # CPU, and ms they were ready to run but waited for one (Linux schedstat; None
    # elsewhere). Sessions run side by side, so it is the whole proxy's, not this case's.
    proxy_ran_ms_s: float | None = None
    proxy_waited_ms_s: float | None = None

    @property
    def starved(self) -> bool:
        ran, waited = self.proxy_ran_ms_s, self.proxy_waited_ms_s
        return ran is not None and waited is not None and ran + waited >= STARVED_BUSY * 1000


async def run_case(
    url: str, case: Case, prompt: np.ndarray, decision_ms: int | None, timeout_s: float = 30.0
) -> Outcome:
    out = Outcome(case, decision_ms)
    speaker = Speaker()
    state: dict[str, Any] = {
        "answer_at": None,
        "clip_t0": None,
        "response": None,
        "item": None,
        "cancelled": None,
        "done": None,
    }
    last_delta: dict[str, float] = {}
    started: list[float] = []
    async with aiohttp.ClientSession() as http, http.ws_connect(url, max_msg_size=0) as ws:

        async def reader() -> None:
            async for msg in ws:
                if msg.type != aiohttp.WSMsgType.TEXT:
                    return
                ev = json.loads(msg.data)
                now = time.monotonic()
                kind = ev.get("type")
                if kind == "response.output_audio.delta":
                    pcm = np.frombuffer(pybase64.b64decode(ev["delta"]), "<i2").astype(np.float32)
                    speaker.add(pcm, now)
                    last_delta[ev.get("response_id", "")] = now
                    if state["answer_at"] is None:
                        state["answer_at"] = now
                        state["response"] = ev.get("response_id")
                        state["item"] = ev.get("item_id")
                elif kind == "input_audio_buffer.speech_started":
                    started.append(now)
                    answering = state["answer_at"] is not None and state["done"] is None
                    if answering or speaker.play_end > now:
                        # A GA client: the user interrupts. Stop playback, truncate.
                        if state["clip_t0"] is not None:
                            out.interrupted = True
                        if state["item"] is not None:
                            played = speaker.played_ms(now)
                            await ws.send_str(
                                json.dumps(
                                    {
                                        "type": "conversation.item.truncate",
                                        "item_id": state["item"],
                                        "content_index": 0,
                                        "audio_end_ms": max(0, played),
                                    }
                                )
                            )
                        speaker.clear()
                elif kind in ("output_audio_buffer.paused", "output_audio_buffer.resumed"):
                    t0 = state["clip_t0"]
                    at = None if t0 is None else round((now - t0) * 1000)
                    out.notes.append(f"{kind.rsplit('.', 1)[1]} {ev.get('reason')} at {at} ms")
                elif kind == "response.done":
                    resp = ev["response"]
                    if resp["id"] == state["response"] and resp["status"] == "cancelled":
                        state["cancelled"] = now
                        speaker.clear()  # the client stops playing what was cut
                    if resp["id"] == state["response"]:
                        state["done"] = now
                elif kind == "error":
                    out.notes.append(str(ev.get("error")))

        rtask = asyncio.create_task(reader())
        session: dict[str, Any] = {"type": "realtime"}
        td: dict[str, Any] = {"type": "server_vad"}
        if decision_ms is not None:
            td["barge_in_decision_ms"] = decision_ms
        if OVERLAP_EVENTS:
            td["overlap_events"] = True
        session["audio"] = {"input": {"turn_detection": td}}
        await ws.send_str(json.dumps({"type": "session.update", "session": session}))
        t_start = time.monotonic()
        n = 0
        clip_pos = 0
        try:
            while time.monotonic() - t_start < timeout_s:
                t_chunk = t_start + n * CHUNK_MS / 1000
                await asyncio.sleep(max(0.0, t_chunk - time.monotonic()))
                mic = np.zeros(CHUNK, dtype=np.float32)
                p0 = n * CHUNK
                if p0 < prompt.size:
                    seg = prompt[p0 : p0 + CHUNK]
                    mic[: seg.size] += seg
                answer_at = state["answer_at"]
                if answer_at is not None and time.monotonic() >= answer_at + PLAY_AFTER_MS / 1000:
                    if state["clip_t0"] is None:
                        state["clip_t0"] = t_chunk
                    if case.clip is not None and clip_pos < case.clip.size:
                        seg = case.clip[clip_pos : clip_pos + CHUNK]
                        mic[: seg.size] += seg
                        clip_pos += CHUNK
                    clip_s = case.clip.size / RATE if case.clip is not None else 4.0
                    if t_chunk > state["clip_t0"] + clip_s + 2.0:
                        break
                if case.echo_gain:
                    mic += case.echo_gain * speaker.echo(
                        t_chunk - case.echo_delay_ms / 1000, CHUNK, case.echo_path
                    )
                pcm = np.clip(mic, -32768, 32767).astype("<i2").tobytes()
                out.late_ms = max(out.late_ms, (time.monotonic() - t_chunk) * 1000)
                await ws.send_str(
                    json.dumps(
                        {
                            "type": "input_audio_buffer.append",
                            "audio": pybase64.b64encode(pcm).decode(),
                        }
                    )
                )
                n += 1
        finally:
            rtask.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await rtask
    clip_t0 = state["clip_t0"]
    if state["answer_at"] is None or clip_t0 is None:
        out.error = "no answer from the assistant"
        return out
    out.barged = state["cancelled"] is not None
    if case.onset_ms is not None:
        onset = clip_t0 + case.onset_ms / 1000
        after = [t for t in started if t >= clip_t0]
        if after:
            out.detect_ms = (after[0] - onset) * 1000
        if out.barged and state["response"] in last_delta:
            out.stop_ms = (last_delta[state["response"]] - onset) * 1000
    return out
