"""Resume chaos benchmark: many sessions, hundreds of disconnects, two replicas, one Redis.

    uv run python bench/resume.py --sessions 24 --disconnects 300 --json

Everything runs for real on loopback: a ``redis-server``, the reference backends
(``turn`` and ``duplex-no-barge-in``, short replies) and two proxy replicas
(``python -m proxy serve``) sharing the Redis store. N clients talk concurrently:
each streams a speech clip from the dev corpus, and while the answer streams it
disconnects at a random event, then resumes on a random replica with the last
``server_event_seq`` it received; sometimes it drops again in the middle of the
replay. After every resume it re-sends its client events that were not answered yet,
and one that was (a duplicate that must be dropped).

Verified per session, by ``server_event_seq`` and content (``event_id`` + a hash of
the text): every server event arrived exactly once, in order (none lost, none
duplicated). Client events carry an ``event_id``: a ``session.update`` with a unique
instruction each, whose ``session.updated`` answer must appear exactly once, on every
session (on ``duplex_emulated`` the proxy answers the update itself; on
``barge_in_emulated`` the upstream does, and its session moves along with the client's,
so a move neither loses nor repeats the answer. Were an upstream session lost instead,
the fresh one would be given the last update again and show here as applied twice).

Half the drops (``--abort-share``) abort the TCP connection instead of closing the
WebSocket: no close frame, a reset. The proxy must park that session as it does one
closed cleanly; its resume is checked the same way.

The audio of every answer that moved while it streamed (its deltas, once each by seq,
reassembled) is compared with the same session's first answer, which never moves (the
reference backends answer a clip with that clip's audio): aligned on the audio before
each seam, the alignment after it must not jump (a gap or a repeat), the length must be
the same, and the max abs sample difference is reported (``bench/resume_checks.py``).

``--overlap-sessions`` more clients (own backends with ``--overlap-reply-ms`` replies)
speak over the answer, a barge-in or a backchannel from the dev corpus, on both routes,
and most turns drop just before the overlap or while the proxy holds, decides, cuts or
releases the answer (``bench/resume_overlap.py``). Checked: a barge-in's answer cut once
(``cancelled`` and one ``conversation.item.truncated``), never completed and cut, and
the user's turn answered; reported: how often a backchannel became an answered turn.

Reported: sessions, disconnects, resumes (same replica / other replica), failures,
lost, duplicated, out of order, client events applied once / twice / never, and the
resume latency (connect -> ``session.resumed``) p50/p99. Bounded: each session does
a fixed number of turns, the whole run has a deadline, and every process started
here is stopped on the way out.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from processes import read_clip
from resume_overlap import OverlapSession, trim
from resume_records import Outcome
from resume_report import render, summarize
from resume_session import Session
from resume_stack import KINDS, stack

CORPUS = Path(__file__).resolve().parents[2] / "shared/corpus/dev"


async def run_all(
    bases: list[str],
    n: int,
    disconnects: int,
    seed: int,
    time_limit: float,
    pace: float,
    ramp: float,
    abort_share: float = 0.0,
    n_over: int = 0,
    over_turns: int = 0,
) -> list[Outcome]:
    manifest = json.loads((CORPUS / "manifest.json").read_text())
    speech = [c for c in manifest["clips"] if c["kind"] == "speech" and "_clean" in c["file"]]
    clips = [(c["file"], read_clip(CORPUS / c["file"])) for c in speech]
    over = {
        "barge_in": [
            (name, trim(pcm, c["speech_ms"][0][0]))
            for c, (name, pcm) in zip(speech, clips, strict=True)
        ],
        "backchannel": [
            (c["file"], trim(read_clip(CORPUS / c["file"]), c["speech_ms"][0][0]))
            for c in manifest["clips"]
            if c["kind"] == "backchannel"
        ],
    }
    deadline = time.monotonic() + time_limit
    per, extra = divmod(disconnects, n)
    sessions = [
        Session(
            i,
            KINDS[i % len(KINDS)],
            bases,
            clips[i % len(clips)],
            per + (i < extra),
            seed,
            pace,
            abort_share,
        )
        for i in range(n)
    ]
    # Speaking over an answer: barge-ins and backchannels on both routes, in turn.
    for j in range(n_over):
        what = ("barge_in", "backchannel")[j // len(KINDS) % 2]
        own = clips[(n + j) % len(clips)]
        others = [c for c in over[what] if c[0] != own[0]]
        sessions.append(
            OverlapSession(
                n + j,
                f"{KINDS[j % len(KINDS)]}-long",
                bases,
                own,
                over_turns,
                seed,
                1.0,
                abort_share,
                what=what,
                over=others,
            )
        )
    n = len(sessions)
    done = 0

    async def one(s: Session) -> Outcome:
        nonlocal done
        # Clients arrive over ``ramp`` seconds, not all in the same millisecond.
        await asyncio.sleep(ramp * s.idx / n)
        out = await s.run(deadline)
        done += 1
        print(f"\r{done}/{n} sessions done", end="", file=sys.stderr)
        return out

    outs = await asyncio.gather(*(one(s) for s in sessions))
    print(file=sys.stderr)
    return list(outs)


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sessions", type=int, default=20)
    ap.add_argument("--disconnects", type=int, default=300, help="in total, across sessions")
    ap.add_argument("--reply-ms", type=int, default=1500, help="length of each spoken reply")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "--pace", type=float, default=1.0, help="audio speed vs real time (0: all at once)"
    )
    ap.add_argument("--ramp-s", type=float, default=3.0, help="clients arrive over this long")
    ap.add_argument(
        "--abort-share",
        type=float,
        default=0.5,
        help="share of drops that abort the TCP connection (no close frame; the rest close)",
    )
    ap.add_argument(
        "--overlap-sessions",
        type=int,
        default=4,
        help="more sessions that speak over the answer (barge-in / backchannel) and drop there",
    )
    ap.add_argument("--overlap-turns", type=int, default=4, help="each overlap session's turns")
    ap.add_argument(
        "--overlap-reply-ms", type=int, default=4000, help="their answers' length (own backends)"
    )
    ap.add_argument("--time-limit", type=float, default=600.0, help="seconds, for the whole run")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--logs", type=Path, default=None, help="keep the replicas' logs here")
    args = ap.parse_args()
    if args.sessions < 1 or args.disconnects < 0:
        ap.error("--sessions must be >= 1 and --disconnects >= 0")
    workdir = Path(tempfile.mkdtemp(prefix="dxp-bench-resume-"))
    try:
        long_ms = args.overlap_reply_ms if args.overlap_sessions else 0
        with stack(args.reply_ms, workdir, args.logs, long_ms) as (bases, _):
            t0 = time.monotonic()
            outs = asyncio.run(
                run_all(
                    bases,
                    args.sessions,
                    args.disconnects,
                    args.seed,
                    args.time_limit,
                    args.pace,
                    args.ramp_s,
                    args.abort_share,
                    args.overlap_sessions,
                    args.overlap_turns,
                )
            )
            summary = summarize(outs, time.monotonic() - t0)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    summary["config"] = {
        "sessions": args.sessions,
        "disconnects": args.disconnects,
        "reply_ms": args.reply_ms,
        "seed": args.seed,
        "pace": args.pace,
        "ramp_s": args.ramp_s,
        "abort_share": args.abort_share,
        "overlap_sessions": args.overlap_sessions,
        "overlap_turns": args.overlap_turns,
        "overlap_reply_ms": args.overlap_reply_ms,
        "replicas": 2,
        "kinds": list(KINDS),
    }
    print(json.dumps(summary, indent=2) if args.json else render(summary))
    ok = (
        summary["lost"] == summary["duplicated"] == summary["out_of_order"] == 0
        and summary["sessions_failed"] == 0
        and summary["client_events"]["applied_twice"] == 0
        and summary["client_events"]["never_applied"] == 0
        and summary["spoken_over_failures"] == 0
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
