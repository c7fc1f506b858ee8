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
import base64
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from processes import (
    proxy_replica,
    read_clip,
    reference_backend,
    route,
    start_redis,
    stop_all,
)
from resume_checks import audio_seams, overlap_odd, overlap_violations, overlaps
from resume_overlap import OverlapSession, trim
from resume_records import Outcome
from resume_session import Session

CORPUS = Path(__file__).resolve().parents[2] / "shared/corpus/dev"
KINDS = ("turn", "duplex-no-barge-in")


# ---------------------------------------------------------------------- processes


@contextlib.contextmanager
def stack(
    reply_ms: int, workdir: Path, logs: Path | None = None, long_reply_ms: int = 0
) -> Iterator[tuple[list[str], str]]:
    """redis-server, reference backends, two proxy replicas; yields their ws bases.

    ``long_reply_ms``: two more backends with longer replies, routed as ``<kind>-long``
    (for the clients that speak over an answer)."""
    procs: list[subprocess.Popen[bytes]] = []
    env = {**os.environ, "DUPLEX_PROXY__SERVER__LOG_LEVEL": "warning"}
    try:
        redis, redis_url = start_redis("--appendonly", "no", "--dir", str(workdir))
        procs.append(redis)
        routes = []
        for kind in KINDS:
            proc, url = reference_backend(kind, reply_ms, env)
            procs.append(proc)
            routes.append(route(kind, url))
            if long_reply_ms:
                proc, url = reference_backend(kind, long_reply_ms, env)
                procs.append(proc)
                routes.append(route(f"{kind}-long", url))
        config = workdir / "proxy.toml"
        # One key for both replicas: the upstream's own session moves along sealed.
        key = base64.b64encode(os.urandom(32)).decode()
        config.write_text(
            f'[server]\nlog_level = "{"info" if logs else "warning"}"\n'
            f'[store]\nurl = "{redis_url}"\nsecret_key = "{key}"\n[auth]\nmode = "none"\n\n'
            + "\n".join(routes)
        )
        bases = []
        replica_env = {k: v for k, v in env.items() if k != "DUPLEX_PROXY__SERVER__LOG_LEVEL"}
        for i in range(2):
            out: Any = subprocess.DEVNULL
            if logs is not None:
                logs.mkdir(parents=True, exist_ok=True)
                out = (logs / f"replica-{i}.log").open("wb")
            proc, url = proxy_replica(config, replica_env, out)
            procs.append(proc)
            bases.append(url)
        yield bases, redis_url
    finally:
        stop_all(procs)


# ---------------------------------------------------------------------- report


def pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    s = sorted(values)
    return round(s[min(len(s) - 1, int(q * len(s)))], 1)


def summarize(outs: list[Outcome], elapsed: float) -> dict[str, Any]:
    lat = [ms for o in outs for ms in o.resume_ms]
    lat_other = [ms for o in outs for ms in o.resume_ms_other]
    sent = sum(o.updates_sent for o in outs)
    once = sum(1 for o in outs for n in o.applied.values() if n == 1)
    twice = sum(1 for o in outs for n in o.applied.values() if n > 1)
    never = sum(o.updates_sent - len(o.applied) for o in outs)
    return {
        "sessions": len(outs),
        "overlap_sessions": sum(1 for o in outs if o.overlaps),
        "sessions_failed": sum(1 for o in outs if o.error),
        "turns": sum(o.turns for o in outs),
        "disconnects": sum(o.disconnects for o in outs),
        "resumes": sum(o.resumes for o in outs),
        "resumes_other_replica": sum(o.resumes_other for o in outs),
        "aborted_drops": sum(o.aborts for o in outs),
        "resumes_after_abort": sum(o.resumes_after_abort for o in outs),
        "resumes_retried": sum(o.resumes_retried for o in outs),
        "resumes_token_given": sum(o.resumes_token_given for o in outs),
        "server_events": sum(o.events for o in outs),
        "audio_deltas": sum(o.audio_deltas for o in outs),
        "lost": sum(o.lost for o in outs),
        "duplicated": sum(o.duplicated for o in outs),
        "out_of_order": sum(o.out_of_order for o in outs),
        "conflicting": sum(o.conflicting for o in outs),
        "client_events": {
            "checked_sessions": len(outs),
            "sent": sent,
            "resent": sum(o.updates_resent for o in outs),
            "applied_once": once,
            "applied_twice": twice,
            "never_applied": never,
        },
        "resume_ms": {
            "p50": pct(lat, 0.5),
            "p99": pct(lat, 0.99),
            "max": round(max(lat), 1) if lat else None,
            "other_replica_p50": pct(lat_other, 0.5),
            "other_replica_p99": pct(lat_other, 0.99),
        },
        "slowest_resumes": sorted((x for o in outs for x in o.slow), key=lambda x: -float(x["ms"]))[
            :5
        ],
        "audio_at_the_seam": audio_seams(outs),
        "spoken_over": overlaps(outs),
        "spoken_over_failures": overlap_violations(outs),
        "spoken_over_unlike_unmoved": overlap_odd(outs),
        "elapsed_s": round(elapsed, 1),
        "errors": [f"{o.kind}: {o.error}" for o in outs if o.error][:10],
    }


def render(s: dict[str, Any]) -> str:
    c, r = s["client_events"], s["resume_ms"]
    return "\n".join(
        [
            "| sessions | disconnects | resumes (other replica) | lost | duplicated "
            "| out of order | client events once/twice/never | resume p50 / p99 ms |",
            "|---|---|---|---|---|---|---|---|",
            f"| {s['sessions']} ({s['sessions_failed']} failed) | {s['disconnects']} "
            f"| {s['resumes']} ({s['resumes_other_replica']}) | {s['lost']} | {s['duplicated']} "
            f"| {s['out_of_order']} | {c['applied_once']}/{c['applied_twice']}/"
            f"{c['never_applied']} of {c['sent']} | {r['p50']} / {r['p99']} |",
            f"\n{s['server_events']} server events ({s['audio_deltas']} audio deltas), "
            f"{s['turns']} turns in {s['elapsed_s']} s",
        ]
    )


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
