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

from bargein_cases import Case, build_cases, prompt_clip, read_wav  # noqa: E402
from processes import ROOT  # noqa: E402
from relay_replay_case import REPLY_MS, onset_lost_ms, run  # noqa: E402

from proxy.vad import VadRunner  # noqa: E402
from shim.settings import ShimSettings  # noqa: E402


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
