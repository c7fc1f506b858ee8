"""The barge-in cases replayed offline, in audio time: the shim, Silero, no sockets.

    uv run python bench/bargein_replay.py --corpus ../shared/corpus/dev [--decision-ms 500]

The same cases as ``bench/bargein.py`` (a question, the answer, one second in a
clip over it, echo of the answer at -10/-20 dB, 0-250 ms late), but the session
core (``shim/``) is driven directly by a script with time as an input: a
turn-based upstream answers with the user's own question looped (as the
reference backend does), the client plays what it gets and, as GA clients do,
stops playback on ``speech_started``. Seconds per case instead of real time, so
the decision rule can be tuned on the dev corpus quickly; ``bench/bargein.py``
measures the real thing through the proxy. ``--windows FILE`` writes every VAD
window's evidence during each overlap (for studying the features).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
from bargein_cases import (
    RATE,
    Case,
    build_cases,
    derived_background,
    echo_chunk,
    prompt_clip,
    read_wav,
)
from bargein_replay_report import Replay, case_row, summarize
from processes import ROOT
from replay_settings import add_settings_flags, replay_settings
from replay_stall import StalledProxy

from proxy.vad import VadRunner
from shim.actions import Action, AnalyzeAudio, SendClient, SendClientAudio
from shim.audio import b64decode, b64encode
from shim.dialects.turn_based import TurnBasedSession
from shim.inputs import ClientEvent, Tick, UpstreamEvent, VadWindow
from shim.settings import ShimSettings

CHUNK_MS = 20
CHUNK = RATE * CHUNK_MS // 1000
REPLY_MS = 8000
PLAY_AFTER_MS = 1000
FIRST_DELTA_MS = 300  # the upstream's first audio after the turn is committed


def run(
    case: Case,
    prompt: np.ndarray,
    vad: VadRunner,
    decision_ms: int | None,
    play_after_ms: int = PLAY_AFTER_MS,
    uplink_stall: tuple[int, int] | None = None,
    backlog: tuple[int, int] | None = None,
    proxy_stall: tuple[int, int] | None = None,
    settings: ShimSettings | None = None,
    mic_chunk_ms: int = CHUNK_MS,
) -> Replay:
    """One case. ``uplink_stall`` (every, length ms): from the answer's first audio on,
    the microphone's chunks are captured on time but sent ``length`` ms late out of every
    ``every`` (a congested uplink, a busy client thread), then all at once. ``backlog``
    (period, most ms): the upstream's events are stamped when they arrived, up to
    ``most`` ms before the session handles and sends them, the lag growing over each
    ``period`` (a session loop behind, as the edge's is under load). ``proxy_stall``
    (every, length ms): from the answer's first audio on, the session handles nothing
    for ``length`` ms out of every ``every`` (a proxy short of CPU); what arrived
    meanwhile is handled in order once it runs again, the client's events stamped
    then (as the edge stamps them when it handles them) and with when they arrived
    (the edge's read time), the upstream's with when they arrived, and what it sends
    reaches the client then. ``settings``: the session's (``replay_settings()`` unless
    given). ``mic_chunk_ms`` (a multiple of 20): the size of the client's appends, the
    microphone captured every 20 ms and sent once an append's worth is in (browser and
    telephony clients send 20-170 ms)."""
    per_append = max(1, mic_chunk_ms // CHUNK_MS)
    if settings is None:
        settings = replay_settings()
    s = TurnBasedSession("sess_replay000000", "m", "up", settings)
    stream = vad.new_stream()
    td: dict[str, Any] = {"type": "server_vad"}
    if decision_ms is not None:
        td["barge_in_decision_ms"] = decision_ms
    s.handle(ClientEvent({"type": "session.update", "session": {"turn_detection": td}}, "", 0.0))
    out = Replay(case)
    speaker = np.zeros(RATE * 60, dtype=np.float32)
    play_end = 0  # speaker sample after the last one queued
    reply = np.resize(prompt, RATE * REPLY_MS // 1000).astype(np.int16)
    reply_pos, reply_rid, reply_from = 0, None, None
    first_delta = clip_t0 = None
    playing_rid = None
    answer_done = False
    clip = case.clip if case.clip is not None else np.zeros(RATE * 4, np.float32)
    end_ms = None
    unsent: list[bytes] = []  # captured, not yet sent (a stalled uplink)
    proxy = StalledProxy(s, proxy_stall)
    t = 0
    while end_ms is None or t * CHUNK_MS < end_ms:
        now = float(t * CHUNK_MS)
        since = None if first_delta is None else now - first_delta
        actions: list[Action] = proxy.tick(now, since)
        # The upstream: streams the reply in real time once a response is on.
        resp = s.response
        if resp is not None and resp.producing and resp.response_id != reply_rid:
            reply_rid, reply_pos, reply_from = resp.response_id, 0, now + FIRST_DELTA_MS
        if reply_rid is not None and resp is not None and resp.response_id == reply_rid:
            if resp.producing and reply_from is not None and now >= reply_from:
                if reply_pos < reply.size:
                    chunk = reply[reply_pos : reply_pos + CHUNK]
                    reply_pos += CHUNK
                    ev = {"type": "response.output_audio.delta", "sample_rate_hz": RATE}
                    ev["audio"] = b64encode(chunk.tobytes())
                    arrived = now
                    if backlog is not None and first_delta is not None:
                        arrived -= backlog[1] * ((now - first_delta) % backlog[0]) / backlog[0]
                    actions += proxy.handle(UpstreamEvent(ev, "", arrived))
                else:
                    done = {"type": "response.output_audio.done"}
                    actions += proxy.handle(UpstreamEvent(done, "", now))
                    reply_rid = None
        # The microphone: the question, then the clip one second into the answer.
        mic = np.zeros(CHUNK, dtype=np.float32)
        p0 = t * CHUNK
        if p0 < prompt.size:
            seg = prompt[p0 : p0 + CHUNK]
            mic[: seg.size] += seg
        if first_delta is not None and now >= first_delta + play_after_ms:
            if clip_t0 is None:
                clip_t0 = now
                end_ms = int(now + clip.size * 1000 / RATE + 2000)
            c0 = int((now - clip_t0) * RATE / 1000)
            seg = clip[c0 : c0 + CHUNK]
            mic[: seg.size] += seg
        mic += echo_chunk(case, speaker, p0, CHUNK)
        unsent.append(np.clip(mic, -32768, 32767).astype("<i2").tobytes())
        if uplink_stall is None or since is None or since % uplink_stall[0] >= uplink_stall[1]:
            whole = len(unsent) - len(unsent) % per_append
            for i in range(0, whole, per_append):
                pcm = b"".join(unsent[i : i + per_append])
                append = {"type": "input_audio_buffer.append", "audio": b64encode(pcm)}
                actions += proxy.handle(ClientEvent(append, "", now))
            del unsent[:whole]
        for a in list(actions):
            if isinstance(a, AnalyzeAudio):
                for prob, end in vad.process_sync(stream, a.samples):
                    actions += s.handle(VadWindow(prob, end, now))
                    if clip_t0 is not None and s.turns._recent:
                        judged = s.turns._recent[-1]
                        ev_, kind = judged.ev, judged.kind
                        out.windows.append(
                            {
                                "t": now - clip_t0,
                                "prob": round(ev_.prob, 3),
                                "level": round(ev_.level_db, 1),
                                "kept": round(ev_.kept_db, 1),
                                "coh": round(ev_.coherence, 3),
                                "voicing": round(ev_.voicing, 3),
                                "decay": round(ev_.decay_db, 1),
                                "kind": kind.value,
                                "user_level": s.evidence.user_level_db,
                                "holding": s.overlap.holding,
                            }
                        )
        actions += [] if proxy.stalled else s.handle(Tick(now))
        # The client: plays audio, and stops playback on speech_started (a GA client).
        for a in actions:
            if isinstance(a, SendClientAudio):
                pcm16 = np.frombuffer(b64decode(a.event["delta"]), "<i2").astype(np.float32)
                start = max(play_end, p0)
                speaker[start : start + pcm16.size] = pcm16[: speaker.size - start]
                play_end = start + pcm16.size
                out.played.append(start)
                if first_delta is None:
                    first_delta, playing_rid = now, a.event["response_id"]
                if a.event["response_id"] == playing_rid:
                    out.stop_ms = now
            elif isinstance(a, SendClient):
                kind_ = a.event.get("type")
                answering = playing_rid is not None and not answer_done
                if kind_ == "input_audio_buffer.speech_started" and (answering or play_end > p0):
                    if clip_t0 is not None and out.interrupted_ms is None:
                        out.interrupted_ms = now - clip_t0
                    speaker[p0:] = 0.0
                    play_end = p0
                elif kind_ == "input_audio_buffer.speech_started" and clip_t0 is not None:
                    out.after += 1  # a new turn once the answer has played out
                elif kind_ == "response.done" and a.event["response"]["id"] == playing_rid:
                    answer_done = True
                    if a.event["response"]["status"] == "cancelled" and clip_t0 is not None:
                        out.cut_ms = now - clip_t0
        t += 1
        if t * CHUNK_MS > 60_000:
            break
    if out.stop_ms is not None and clip_t0 is not None:
        out.stop_ms -= clip_t0
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default=str(ROOT.parent / "shared" / "corpus" / "dev"))
    ap.add_argument("--decision-ms", type=int, default=None)
    ap.add_argument("--only", default=None)
    ap.add_argument(
        "--play-after-ms",
        default=str(PLAY_AFTER_MS),
        help="where the clip starts in the answer; several (1000,1008,...) replay each case"
        " at each: the clip against the VAD's 32 ms windows, as real-time runs vary it",
    )
    ap.add_argument("--derive-background", action="store_true", help="add babble/TV cases")
    ap.add_argument("--windows", default=None, help="write per-window evidence (JSON lines)")
    ap.add_argument(
        "--uplink-stall",
        default=None,
        help="EVERY,LENGTH ms: the microphone's chunks go out LENGTH ms late out of every"
        " EVERY during the answer (captured on time, sent together)",
    )
    ap.add_argument(
        "--proxy-stall",
        default=None,
        help="EVERY,LENGTH ms: the proxy handles nothing for LENGTH ms out of every EVERY"
        " during the answer, then all that arrived meanwhile, in order",
    )
    ap.add_argument(
        "--mic-chunk-ms",
        type=int,
        default=CHUNK_MS,
        help="the client's append size (a multiple of 20 ms; default 20)",
    )
    add_settings_flags(ap)
    args = ap.parse_args()
    if args.mic_chunk_ms <= 0 or args.mic_chunk_ms % CHUNK_MS:
        ap.error(f"--mic-chunk-ms must be a positive multiple of {CHUNK_MS}")
    settings = replay_settings(args.background_pause_ms)
    corpus = Path(args.corpus)
    prompt = read_wav(corpus / prompt_clip(corpus))
    cases = build_cases(corpus, ["replay"])
    if args.derive_background:
        try:
            cases += derived_background(corpus, "replay")
        except ValueError as exc:
            ap.error(str(exc))
    if args.only:
        cases = [c for c in cases if args.only in c.name]
    vad = VadRunner()
    rows = []
    sink = open(args.windows, "w") if args.windows else None
    phases = [int(v) for v in args.play_after_ms.split(",")]
    stall = None
    if args.uplink_stall:
        every, length = (int(v) for v in args.uplink_stall.split(","))
        stall = (every, length)
    proxy_stall = None
    if args.proxy_stall:
        every, length = (int(v) for v in args.proxy_stall.split(","))
        proxy_stall = (every, length)
    for case, phase in ((c, ph) for c in cases for ph in phases):
        r = run(
            case,
            prompt,
            vad,
            args.decision_ms,
            phase,
            stall,
            None,
            proxy_stall,
            settings,
            args.mic_chunk_ms,
        )
        label = case.name if len(phases) == 1 else f"{case.name}@{phase}"
        rows.append(case_row(r, label))
        print(json.dumps(rows[-1]), file=sys.stderr)
        if sink is not None:
            for w in r.windows:
                sink.write(json.dumps({"clip": case.name, "kind": case.kind, **w}) + "\n")
    summary = summarize(rows)
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
