"""The barge-in cases replayed offline through ``barge_in_emulated``, in audio time.

    uv run python bench/bargein_relay_replay.py --corpus CORPUS --only echo --proxy-stall 2000,800
    uv run python bench/bargein_relay_replay.py ... --root OTHER_CHECKOUT   # that code's shim
    uv run python bench/bargein_relay_replay.py --corpus CORPUS --reply-after 100,200,300

``bench/bargein_replay.py``'s cases (the question, an answer, echo of it at -10/-20 dB,
0-250 ms late, a clip one second in), driven through the GA relay's session core
(``shim/dialects/ga_relay.py``) over a stand-in duplex upstream: it answers the first
turn with the question looped, in real time, and runs a VAD of its own (Silero, 0.5,
150 ms, no echo suppression, as vLLM-Omni's server VAD) on the microphone audio the
proxy forwards; speech it hears while answering is a barge-in (``speech_started`` to
the client, the answer cancelled), after it a ``speech_started`` all the same. The
client plays what it gets and stops on ``speech_started``. ``--proxy-stall EVERY,LENGTH``:
from the answer's first audio the session handles nothing for LENGTH ms out of every
EVERY, then what came meanwhile in order (as in ``bench/bargein_replay.py``).
``--vad-lag MS[,MS...]``: the VAD's windows come back MS after their audio was handled
(a busy VAD thread), from the answer's first audio on; one run per lag, a summary each.

Per case: whether the client was told ``speech_started`` or its answer cut, what the
upstream's VAD said, and how much of the answer's echo (the microphone's chunks that
carry it, ``echo_ms``) the proxy forwarded to the upstream.

``--reply-after MS[,MS...]``: each speech clip instead as the user's reply MS after the
answer's end, over the answer's echo (``--reply-echo DELAY_MS,GAIN_DB``, 350 ms late at
-10 dB unless given: echo a gate holding for the answer's echo lets the reply begin
in); per reply, how much of it from its labelled onset on the upstream never got
(``onset_lost_ms``, -1: none of it).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from replay_settings import add_settings_flags, replay_settings

ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument("--corpus", default=None)
ap.add_argument("--only", default=None)
ap.add_argument("--proxy-stall", default=None, help="EVERY,LENGTH ms")
ap.add_argument(
    "--vad-lag", default="0", help="MS[,MS...]: ms the VAD's windows come late (one run each)"
)
ap.add_argument(
    "--play-after-ms",
    default="1000",
    help="MS[,MS...]: where each clip starts in the (8 s) answer, each case at each: later"
    " ones go on past the answer's end (a turn after it: turn_after)",
)
ap.add_argument("--root", type=Path, default=None, help="another checkout's shim")
ap.add_argument("--json", action="store_true", help="one JSON summary on stdout")
ap.add_argument(
    "--reply-after",
    default=None,
    help="MS[,MS...]: the speech clips as replies this long after the answer's end,"
    " over its echo (--reply-echo); how much of each reply's onset the upstream missed",
)
ap.add_argument("--reply-echo", default="350,-10", help="DELAY_MS,GAIN_DB of that echo")
add_settings_flags(ap)
ARGS = ap.parse_args() if __name__ == "__main__" else None
if ARGS is not None and ARGS.root is not None:
    sys.path.insert(0, str(ARGS.root.resolve()))

from bargein_cases import RATE, Case, build_cases, prompt_clip, read_wav  # noqa: E402
from processes import ROOT  # noqa: E402
from replay_stall import StalledProxy  # noqa: E402

from proxy.vad import VadRunner  # noqa: E402
from shim.actions import Action, AnalyzeAudio, SendClient, SendClientAudio, SendUpstream  # noqa: E402
from shim.audio import b64decode, b64encode  # noqa: E402
from shim.dialects.ga_relay import GaRelaySession  # noqa: E402
from shim.inputs import ClientEvent, Tick, UpstreamEvent, VadWindow  # noqa: E402
from shim.settings import ShimSettings  # noqa: E402

CHUNK_MS = 20
CHUNK = RATE * CHUNK_MS // 1000
RATE_IN = 16000  # the input timeline's (the VAD's) rate
REPLY_MS = 8000
PLAY_AFTER_MS = 1000
FIRST_DELTA_MS = 300  # the upstream's first audio after the question ends
UP_THRESHOLD, UP_MIN_SPEECH_MS = 0.5, 150  # the upstream's server VAD (shim/ga_upstream.py)
ECHO_FLOOR = 30.0  # a chunk carries echo when its echo's RMS exceeds this (int16 units)
RID = "resp-duplex-1-0-replay00"
AID = f"item_{RID}"


@dataclass
class RelayReplay:
    case: Case
    interrupted: bool = False  # speech_started while the answer played
    cut: bool = False  # the answer cancelled
    upstream_speech: int = 0  # runs of speech the upstream's VAD heard after the question
    told: int = 0  # speech_started the client was told after the answer began
    after: int = 0  # of those, with the answer completed (not cut) and played out: a new turn
    echo_ms: int = 0  # microphone audio carrying the answer's echo forwarded upstream
    clip_at: int | None = None  # where the clip begins on the input timeline (16 kHz)
    # The microphone audio forwarded upstream, as input spans ([start, end), 16 kHz).
    sent: list[tuple[int, int]] = field(default_factory=list)


def _upstream_vad_16k(pcm24: np.ndarray) -> np.ndarray:
    """The forwarded audio as the upstream's VAD reads it: 16 kHz float."""
    n = pcm24.size * 2 // 3
    x = np.interp(np.arange(n) * 1.5, np.arange(pcm24.size), pcm24.astype(np.float32))
    return (x / 32768.0).astype(np.float32)


def run(
    case: Case,
    prompt: np.ndarray,
    vad: VadRunner,
    proxy_stall: tuple[int, int] | None,
    clip_at_ms: int = PLAY_AFTER_MS,
    vad_lag_ms: int = 0,
    settings: ShimSettings | None = None,
) -> RelayReplay:
    """One case; its clip begins ``clip_at_ms`` after the answer's first audio (past
    ``REPLY_MS``: after the answer's end, and the replay goes on one second after it).
    From the answer's first audio on, the VAD's windows reach the session ``vad_lag_ms``
    after their audio was handled. ``settings``: the session's (``replay_settings()``
    unless given)."""
    if settings is None:
        settings = replay_settings()
    s = GaRelaySession("sess_replay000000", "m", settings, {"supports_barge_in": True})
    s.bind_upstream({"type": "session.created", "session": {"id": "up-1"}})
    stream, up_stream = vad.new_stream(), vad.new_stream()
    out = RelayReplay(case)
    speaker = np.zeros(RATE * 60, dtype=np.float32)
    play_end = 0
    reply = np.resize(prompt, RATE * REPLY_MS // 1000).astype(np.int16)
    reply_pos, reply_from, answering = 0, float(prompt.size * 1000 // RATE + FIRST_DELTA_MS), True
    first_delta = clip_t0 = end_ms = None
    completed = False  # the answer's response.done (completed) reached the client
    clip = case.clip if case.clip is not None else np.zeros(RATE * 4, np.float32)
    echo_in: dict[int, bool] = {}  # id of an append -> its chunk carries echo
    proxy = StalledProxy(s, proxy_stall)
    up_run, up_heard_from = 0, prompt.size * 1000 // RATE + 500  # after the question
    late: list[tuple[float, float, int]] = []  # VAD windows on their way: (due, prob, end)
    t = 0
    while end_ms is None or t * CHUNK_MS < end_ms:
        now = float(t * CHUNK_MS)
        since = None if first_delta is None else now - first_delta
        actions: list[Action] = proxy.tick(now, since)
        # The upstream: the answer in real time, from FIRST_DELTA_MS after the question.
        if answering and now >= reply_from:
            if reply_pos == 0:
                created = {"type": "response.created", "response": {"id": RID}}
                actions += proxy.handle(UpstreamEvent(created, "", now))
            if reply_pos < reply.size:
                ev: dict[str, Any] = {"type": "response.output_audio.delta"}
                ev |= {"response_id": RID, "item_id": AID, "output_index": 0}
                ev |= {"content_index": 0, "sample_rate_hz": RATE}
                ev["delta"] = b64encode(reply[reply_pos : reply_pos + CHUNK].tobytes())
                reply_pos += CHUNK
                actions += proxy.handle(UpstreamEvent(ev, "", now))
            else:
                done = {"type": "response.done", "response": {"id": RID, "status": "completed"}}
                actions += proxy.handle(UpstreamEvent(done, "", now))
                answering = False
        # The microphone: the question, the clip one second into the answer, the echo.
        mic = np.zeros(CHUNK, dtype=np.float32)
        p0 = t * CHUNK
        if p0 < prompt.size:
            seg = prompt[p0 : p0 + CHUNK]
            mic[: seg.size] += seg
        if first_delta is not None and now >= first_delta + clip_at_ms:
            if clip_t0 is None:
                clip_t0, out.clip_at = now, p0 * 2 // 3
                after = REPLY_MS if clip_at_ms < REPLY_MS else 1000
                end_ms = int(now + clip.size * 1000 / RATE + after)
            c0 = int((now - clip_t0) * RATE / 1000)
            seg = clip[c0 : c0 + CHUNK]
            mic[: seg.size] += seg
        echo = np.zeros(CHUNK, dtype=np.float32)
        lo = p0 - RATE * case.echo_delay_ms // 1000
        if case.echo_gain and lo >= 0:
            if case.echo_path is not None:
                h = case.echo_path.history
                head = np.zeros(max(0, h - lo), np.float32)
                dry = np.concatenate([head, speaker[max(0, lo - h) : lo + CHUNK]])
                echo = case.echo_gain * case.echo_path.render(dry, CHUNK)
            else:
                echo = case.echo_gain * speaker[lo : lo + CHUNK]
        pcm = np.clip(mic + echo, -32768, 32767).astype("<i2").tobytes()
        append = {"type": "input_audio_buffer.append", "audio": b64encode(pcm)}
        echo_in[id(append)] = float(np.sqrt(np.mean(echo.astype(np.float64) ** 2))) > ECHO_FLOOR
        actions += proxy.handle(ClientEvent(append, "", now))
        for a in list(actions):
            if isinstance(a, AnalyzeAudio):
                lag = 0 if first_delta is None else vad_lag_ms
                late += [(now + lag, p, e) for p, e in vad.process_sync(stream, a.samples)]
        while late and late[0][0] <= now:
            _, prob, end = late.pop(0)
            actions += s.handle(VadWindow(prob, end, now))
        actions += [] if proxy.stalled else s.handle(Tick(now))
        # The upstream hears what the proxy forwards, with a VAD and no echo suppression.
        for a in actions:
            if not isinstance(a, SendUpstream) or a.event.get("type") != append["type"]:
                continue
            out.echo_ms += CHUNK_MS * echo_in.get(id(a.event), False)
            if a.span is not None:
                out.sent.append(a.span)
            up_pcm = np.frombuffer(b64decode(str(a.event["audio"])), "<i2")
            for prob, _ in vad.process_sync(up_stream, _upstream_vad_16k(up_pcm)):
                up_run = up_run + 32 if prob >= UP_THRESHOLD else 0
                if up_run == 32 * -(-UP_MIN_SPEECH_MS // 32) and now >= up_heard_from:
                    out.upstream_speech += 1
                    heard = {"type": "input_audio_buffer.speech_started", "audio_start_ms": 0}
                    actions += s.handle(UpstreamEvent(heard, "", now))
                    if answering or reply_pos:
                        if answering:  # a duplex upstream barges in on any speech
                            answering = False
                            done = {"type": "response.done"}
                            done["response"] = {"id": RID, "status": "cancelled"}
                            actions += s.handle(UpstreamEvent(done, "", now))
        # The client: plays audio, and stops playback on speech_started (a GA client).
        for a in actions:
            if isinstance(a, SendClientAudio):
                pcm16 = np.frombuffer(b64decode(a.event["delta"]), "<i2").astype(np.float32)
                start = max(play_end, p0)
                speaker[start : start + pcm16.size] = pcm16[: speaker.size - start]
                play_end = start + pcm16.size
                first_delta = now if first_delta is None else first_delta
            elif isinstance(a, SendClient):
                kind = a.event.get("type")
                if kind == "input_audio_buffer.speech_started" and first_delta is not None:
                    out.told += 1
                    out.interrupted |= play_end > p0 or answering
                    out.after += completed and not out.cut and play_end <= p0
                    speaker[p0:] = 0.0
                    play_end = min(play_end, p0)
                elif kind == "response.done" and a.event["response"].get("status") == "cancelled":
                    out.cut = True
                elif kind == "response.done":
                    completed = True  # what the client is told of next is a new turn
        t += 1
        if t * CHUNK_MS > 60_000:
            break
    return out


def onset_lost_ms(r: RelayReplay, onset_ms: int) -> int:
    """How much of a reply from its (labelled) onset on never went upstream: the
    first audio forwarded from a second before the clip on begins that much after."""
    assert r.clip_at is not None
    sent = [s for s, e in r.sent if e > r.clip_at - RATE_IN]
    if not sent:
        return -1  # nothing of it went
    return max(0, sent[0] - (r.clip_at + onset_ms * RATE_IN // 1000)) * 1000 // RATE_IN


def replies(corpus: Path, prompt: np.ndarray, vad: VadRunner, settings: ShimSettings) -> int:
    """``--reply-after``: each speech clip as a reply after the answer, over its echo."""
    assert ARGS is not None
    delay, gain_db = (int(v) for v in ARGS.reply_echo.split(","))
    rows = []
    for case in build_cases(corpus, ["replay"]):
        if case.kind != "speech" or case.onset_ms is None or ARGS.only not in (None, case.name):
            continue
        case.echo_gain, case.echo_delay_ms = 10 ** (gain_db / 20), delay
        for after in (int(v) for v in ARGS.reply_after.split(",")):
            r = run(case, prompt, vad, None, REPLY_MS + after, settings=settings)
            lost = onset_lost_ms(r, case.onset_ms)
            row = {"clip": case.name, "after_ms": after, "onset_lost_ms": lost}
            rows.append(row | {"upstream_speech": r.upstream_speech, "echo_ms": r.echo_ms})
            print(json.dumps(rows[-1]), file=sys.stderr)
    summary = {
        "cases": len(rows),
        "onset_lost_cases": sum(r["onset_lost_ms"] != 0 for r in rows),
        "onset_lost_max_ms": max((r["onset_lost_ms"] for r in rows), default=0),
        "upstream_speech_cases": sum(r["upstream_speech"] > 0 for r in rows),
        "echo_forwarded_cases": sum(r["echo_ms"] > 0 for r in rows),
    }
    print(json.dumps(summary) if ARGS.json else json.dumps(summary, indent=1))
    return 0


def main() -> int:
    assert ARGS is not None
    settings = replay_settings(ARGS.background_pause_ms)
    corpus = Path(ARGS.corpus or ROOT.parent / "shared" / "corpus" / "dev")
    prompt = read_wav(corpus / prompt_clip(corpus))
    if ARGS.reply_after:
        return replies(corpus, prompt, VadRunner(), settings)
    cases = [c for c in build_cases(corpus, ["replay"]) if not ARGS.only or ARGS.only in c.name]
    stall = None
    if ARGS.proxy_stall:
        every, length = (int(v) for v in ARGS.proxy_stall.split(","))
        stall = (every, length)
    vad = VadRunner()
    at = [int(v) for v in ARGS.play_after_ms.split(",")]
    for lag in (int(v) for v in ARGS.vad_lag.split(",")):
        summary = lagged(cases, prompt, vad, stall, lag, at, settings)
        print(json.dumps(summary) if ARGS.json else json.dumps(summary, indent=1))
    return 0


def lagged(
    cases: list[Case],
    prompt: np.ndarray,
    vad: VadRunner,
    stall: tuple[int, int] | None,
    lag: int,
    at: list[int],
    settings: ShimSettings,
) -> dict[str, Any]:
    """Every case with the VAD ``lag`` ms late, its clip at each of ``at`` ms into the
    answer; its rows on stderr, the summary."""
    rows = []
    for case, clip_at in ((c, ms) for c in cases for ms in at):
        r = run(case, prompt, vad, stall, clip_at, lag, settings)
        rows.append(
            {
                "clip": case.name if len(at) == 1 else f"{case.name}@{clip_at}",
                "kind": case.kind,
                "vad_lag_ms": lag,
                "interrupted": r.interrupted,
                "cut": r.cut,
                "upstream_speech": r.upstream_speech,
                "told_speech_started": r.told,
                "turn_after": r.after,
                "echo_ms": r.echo_ms,
            }
        )
        print(json.dumps(rows[-1]), file=sys.stderr)
    return {
        "vad_lag_ms": lag,
        "cases": len(rows),
        "interrupted": sum(r["interrupted"] for r in rows),
        "cut": sum(r["cut"] for r in rows),
        "cut_by_kind": {
            k: sum(r["cut"] for r in rows if r["kind"] == k)
            for k in sorted({c.kind for c in cases})
        },
        "upstream_speech_cases": sum(r["upstream_speech"] > 0 for r in rows),
        "told_speech_started_cases": sum(r["told_speech_started"] > 0 for r in rows),
        # A new turn once the answer had played out (for a television, babble, noise,
        # echo or a backchannel: one the assistant answers wrongly).
        "turn_after_by_kind": {
            k: sum(r["turn_after"] > 0 for r in rows if r["kind"] == k)
            for k in sorted({c.kind for c in cases})
        },
        "echo_forwarded_cases": sum(r["echo_ms"] > 0 for r in rows),
        "echo_forwarded_ms": sum(r["echo_ms"] for r in rows),
        "echo_forwarded_max_ms": max((r["echo_ms"] for r in rows), default=0),
    }


if __name__ == "__main__":
    raise SystemExit(main())
