"""Barge-in benchmark: real sessions through the proxy at real-time pace.

    uv run python bench/bargein.py --corpus ../shared/corpus/dev --json

For each labelled clip (speech, noise, backchannel) and each emulated mode (the
``turn`` and ``duplex-no-barge-in`` reference backends behind the proxy, all real
processes on loopback): the user asks a question, the assistant answers, and one
second into the answer the clip is played into the microphone over the assistant's
audio. The client plays the assistant's audio on a real-time clock, as a speaker
would, so it can also feed that audio back into the microphone (echo cases:
-10 dB and -20 dB, 0-250 ms late) for a client with no echo cancellation.

Reported per mode: speech recall (share of speech clips that barge in), detection
delay (speech onset -> ``input_audio_buffer.speech_started`` at the client), audio
stop delay (onset -> last assistant audio delta of the cancelled response), false
barge-ins on noise, backchannel and echo.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
import wave
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import numpy as np
import pybase64
from processes import ROOT, proxy_replica, reference_backend, route, stop_all

RATE = 24000
CHUNK_MS = 20
CHUNK = RATE * CHUNK_MS // 1000
PROMPT = "utt00_clean.wav"
PLAY_AFTER_MS = 1000  # the clip starts this far into the assistant's answer
MODES = {"duplex_emulated": "turn", "barge_in_emulated": "duplex-no-barge-in"}


def read_wav(path: Path) -> np.ndarray:
    with wave.open(str(path)) as w:
        assert w.getframerate() == RATE and w.getsampwidth() == 2 and w.getnchannels() == 1
        return np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.float32)


@dataclass
class Case:
    mode: str
    kind: str  # speech | noise | backchannel | echo
    name: str
    clip: np.ndarray | None
    onset_ms: int | None  # first labelled speech in the clip
    echo_gain: float = 0.0
    echo_delay_ms: int = 0


@dataclass
class Outcome:
    case: Case
    barged: bool = False
    detect_ms: float | None = None
    stop_ms: float | None = None
    error: str | None = None
    notes: list[str] = field(default_factory=list)


class Speaker:
    """The client's loudspeaker: plays received assistant audio on a real-time clock."""

    def __init__(self) -> None:
        self.audio = np.zeros(0, dtype=np.float32)
        self.start: float | None = None  # wall time the first sample played
        self.play_end = 0.0

    def add(self, pcm: np.ndarray, now: float) -> None:
        if self.start is None:
            self.start = now
        begin = max(self.play_end, now)
        # Write at the position it will play (gaps are silence).
        pos = int((begin - self.start) * RATE)
        need = pos + pcm.size
        if need > self.audio.size:
            self.audio = np.concatenate([self.audio, np.zeros(need - self.audio.size, np.float32)])
        self.audio[pos:need] = pcm
        self.play_end = begin + pcm.size / RATE

    def clear(self) -> None:
        self.play_end = 0.0
        if self.start is not None:
            self.audio = self.audio[: int((time.monotonic() - self.start) * RATE)]

    def heard(self, t0: float, n: int) -> np.ndarray:
        """What the speaker emits from wall time t0 for n samples."""
        out = np.zeros(n, dtype=np.float32)
        if self.start is None:
            return out
        pos = int((t0 - self.start) * RATE)
        lo, hi = max(pos, 0), min(pos + n, self.audio.size)
        if hi > lo:
            out[lo - pos : hi - pos] = self.audio[lo:hi]
        return out


async def run_case(url: str, case: Case, prompt: np.ndarray, timeout_s: float = 30.0) -> Outcome:
    out = Outcome(case)
    speaker = Speaker()
    state: dict[str, Any] = {
        "answer_at": None,
        "clip_t0": None,
        "response": None,
        "cancelled": None,
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
                elif kind == "input_audio_buffer.speech_started":
                    started.append(now)
                elif kind == "input_audio_buffer.speech_stopped":
                    pass
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
        await ws.send_str(json.dumps({"type": "session.update", "session": {"type": "realtime"}}))
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
                    mic += case.echo_gain * speaker.heard(
                        t_chunk - case.echo_delay_ms / 1000, CHUNK
                    )
                pcm = np.clip(mic, -32768, 32767).astype("<i2").tobytes()
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


def pct(values: list[float], q: float) -> float | None:
    return float(np.percentile(values, q)) if values else None


def summarize(results: list[Outcome]) -> dict[str, Any]:
    table: dict[str, Any] = {}
    for mode in MODES:
        rs = [r for r in results if r.case.mode == mode and r.error is None]
        speech = [r for r in rs if r.case.kind == "speech"]
        detect = [r.detect_ms for r in speech if r.detect_ms is not None]
        stop = [r.stop_ms for r in speech if r.stop_ms is not None]

        def rate(kind: str, rs: list[Outcome] = rs) -> dict[str, Any]:
            group = [r for r in rs if r.case.kind == kind]
            return {
                "false_barge_ins": sum(r.barged for r in group),
                "cases": len(group),
                "rate": (sum(r.barged for r in group) / len(group)) if group else None,
            }

        table[mode] = {
            "speech_recall": (sum(r.barged for r in speech) / len(speech)) if speech else None,
            "speech_cases": len(speech),
            "detection_ms_p50": pct(detect, 50),
            "detection_ms_p95": pct(detect, 95),
            "stop_ms_p50": pct(stop, 50),
            "stop_ms_p95": pct(stop, 95),
            "noise": rate("noise"),
            "backchannel": rate("backchannel"),
            "echo": rate("echo"),
            "errors": sum(1 for r in results if r.case.mode == mode and r.error is not None),
        }
    return table


def build_cases(corpus: Path, modes: list[str]) -> list[Case]:
    manifest = json.loads((corpus / "manifest.json").read_text())
    cases: list[Case] = []
    for mode in modes:
        for clip in manifest["clips"]:
            audio = read_wav(corpus / clip["file"])
            onset = clip["speech_ms"][0][0] if clip["speech_ms"] else None
            cases.append(Case(mode, clip["kind"], clip["file"], audio, onset))
        for db in (-10, -20):
            for delay in (0, 120, 250):
                cases.append(
                    Case(mode, "echo", f"echo{db}dB_{delay}ms", None, None, 10 ** (db / 20), delay)
                )
    return cases


@contextlib.contextmanager
def stack(config: dict[str, Any]) -> Any:
    """Reference backends and the proxy as real processes; yields the proxy URL."""
    procs: list[subprocess.Popen[bytes]] = []
    env = {**os.environ, "DUPLEX_PROXY__SERVER__LOG_LEVEL": "warning"}
    with tempfile.TemporaryDirectory() as tmp:
        try:
            routes = []
            for mode, kind in MODES.items():
                proc, url = reference_backend(kind, 8000, env)
                procs.append(proc)
                routes.append(route(mode, url))
            vad = "".join(f"{k} = {v}\n" for k, v in config.items())
            cfg = Path(tmp) / "proxy.toml"
            head = f'[server]\nlog_level = "warning"\n[auth]\nmode = "none"\n[vad]\n{vad}\n'
            cfg.write_text(head + "\n".join(routes))
            proc, url = proxy_replica(cfg, env)
            procs.append(proc)
            yield url
        finally:
            stop_all(procs)


async def run_all(
    base: str, cases: list[Case], prompt: np.ndarray, concurrency: int
) -> list[Outcome]:
    sem = asyncio.Semaphore(concurrency)
    done = 0

    async def one(case: Case) -> Outcome:
        nonlocal done
        async with sem:
            try:
                r = await run_case(f"{base}?model={case.mode}", case, prompt)
            except Exception as exc:  # a failed case is reported, not fatal
                r = Outcome(case, error=f"{type(exc).__name__}: {exc}")
            done += 1
            print(
                f"\r{done}/{len(cases)} {case.mode:18s} {case.name:24s} barge={r.barged}",
                end="",
                file=sys.stderr,
            )
            return r

    results = await asyncio.gather(*(one(c) for c in cases))
    print(file=sys.stderr)
    return list(results)


def render(table: dict[str, Any]) -> str:
    def f(v: Any, fmt: str = "{:.0f}") -> str:
        return "-" if v is None else fmt.format(v)

    header = (
        "| mode | recall | detect p50/p95 ms | stop p50/p95 ms "
        "| false: noise | backchannel | echo |"
    )
    lines = [header, "|---|---|---|---|---|---|---|"]
    for mode, t in table.items():
        falses = " | ".join(
            f"{t[k]['false_barge_ins']}/{t[k]['cases']}" for k in ("noise", "backchannel", "echo")
        )
        lines.append(
            f"| {mode} | {f(t['speech_recall'], '{:.2f}')} ({t['speech_cases']}) "
            f"| {f(t['detection_ms_p50'])} / {f(t['detection_ms_p95'])} "
            f"| {f(t['stop_ms_p50'])} / {f(t['stop_ms_p95'])} | {falses} |"
        )
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--corpus", default=str(ROOT.parent / "shared" / "corpus" / "dev"))
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--concurrency", type=int, default=6)
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--only", default=None, help="run only clips whose name contains this")
    ap.add_argument(
        "--vad", action="append", default=[], help="override a [vad] key, e.g. min_barge_in_ms=300"
    )
    args = ap.parse_args()
    corpus = Path(args.corpus)
    prompt = read_wav(corpus / PROMPT)
    cases = build_cases(corpus, args.modes.split(","))
    if args.only:
        cases = [c for c in cases if args.only in c.name]
    vad = dict(kv.split("=", 1) for kv in args.vad)
    with stack(vad) as base:
        results = asyncio.run(run_all(base, cases, prompt, args.concurrency))
    table = summarize(results)
    if args.json:
        detail = [
            {
                "mode": r.case.mode,
                "kind": r.case.kind,
                "clip": r.case.name,
                "barged": r.barged,
                "detect_ms": r.detect_ms,
                "stop_ms": r.stop_ms,
                "error": r.error,
            }
            for r in results
        ]
        print(json.dumps({"summary": table, "cases": detail, "vad": vad}, indent=2))
    else:
        print(render(table))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
