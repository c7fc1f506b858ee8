"""The OpenAI Agents SDK through the proxy: client-visible interruptions per clip class.

    uv run python bench/stimuli.py --out /tmp/a31 --seed 31 --variety held-out
    uv run python bench/agents_sdk.py --corpus /tmp/a31 --json --concurrency 5

Starts strict reference backends (vLLM-Omni 0.30.0 where a client can tell) and one
``duplex-proxy serve`` process, with a route per mode: ``passthrough`` (a duplex backend,
``ga_passthrough = true``), ``barge_in_emulated`` (a duplex backend that can barge in),
``barge_in_emulated_nobi`` (``duplex-no-barge-in``) and ``duplex_emulated`` (``turn``).
Then, per mode and per clip of the corpus's manifest (any ``kind``; the ``question`` opens
every session), the real SDK's ``RealtimeRunner`` (``bench/agents_sdk_session.py``) asks the
question, plays the answer on a real-time loudspeaker and plays the clip into the answer
0.8-2.5 s after it began (drawn from ``--seed``); echo cases (the manifest's and
``bench/bargein_cases.py``'s -10/-20 dB, 0/120/250 ms) feed the loudspeaker back.

Reported per mode and class (one JSON object with ``--json``, else a Markdown table):
sessions the SDK interrupted (``audio_interrupted``) after the stimulus began (and those
in which an answer was under way then: the SDK also fires it on the speech of a new turn
after the answer has played out), cuts
(cancelled responses), real barge-ins (``speech``) interrupted and interrupted once, first
answers played whole (all ``--reply-ms`` of it, never stopped), events that do not validate
as openai's ``RealtimeServerEvent``; and totals. Everything it started is stopped on exit,
error, Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import random
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
from agents_sdk_report import render, summarize
from agents_sdk_session import Session, run_session
from bargein_cases import Case, build_cases, interleaved, manifest, prompt_clip, read_wav
from processes import ROOT, proxy_replica, reference_backend, stop_all

# mode name (the route's model) -> reference backend kind, relayed byte for byte
MODES: dict[str, tuple[str, bool]] = {
    "passthrough": ("duplex", True),
    "barge_in_emulated": ("duplex", False),
    "barge_in_emulated_nobi": ("duplex-no-barge-in", False),
    "duplex_emulated": ("turn", False),
}
AFTER_S = (0.8, 2.5)  # the clip starts this far into the answer (uniform, seeded)


@contextlib.contextmanager
def stack(modes: list[str], reply_ms: int) -> Iterator[str]:
    """The backends and the proxy as real processes; yields the proxy's realtime URL."""
    procs: list[subprocess.Popen[bytes]] = []
    env = {**os.environ, "DUPLEX_PROXY__SERVER__LOG_LEVEL": "warning"}
    with tempfile.TemporaryDirectory() as tmp:
        try:
            routes = []
            for mode in modes:
                kind, passthrough = MODES[mode]
                proc, url = reference_backend(kind, reply_ms, env, "--strict")
                procs.append(proc)
                routes.append(f'[[routes]]\nmodel = "{mode}"\nupstream = "{url}"\n')
                if passthrough:
                    routes[-1] += "ga_passthrough = true\n"
            cfg = Path(tmp) / "proxy.toml"
            head = '[server]\nlog_level = "warning"\n[auth]\nmode = "none"\n'
            cfg.write_text(head + "\n".join(routes))
            proc, url = proxy_replica(cfg, env)
            procs.append(proc)
            yield url
        finally:
            stop_all(procs)


async def run_all(
    base: str, cases: list[Case], prompt: np.ndarray, concurrency: int, seed: int, reply_ms: int
) -> list[Session]:
    sem = asyncio.Semaphore(concurrency)
    rng = random.Random(seed)
    afters = [round(rng.uniform(*AFTER_S), 2) for _ in cases]
    done = 0

    async def one(case: Case, after_s: float) -> Session:
        nonlocal done
        async with sem:
            try:
                url = f"{base}?model={case.mode}"
                s = await run_session(url, case, prompt, after_s, reply_ms)
            except Exception as exc:  # a failed session is reported, not fatal
                s = Session(case, after_s, error=f"{type(exc).__name__}: {exc}"[:300])
            done += 1
            print(
                f"\r{done}/{len(cases)} {case.mode:22s} {case.name:22s} "
                f"interrupted={s.interruptions} cut={s.cut}   ",
                end="",
                file=sys.stderr,
            )
            return s

    results = await asyncio.gather(*(one(c, a) for c, a in zip(cases, afters, strict=True)))
    print(file=sys.stderr)
    return list(results)


def case_row(s: Session, meta: dict[str, dict[str, Any]]) -> dict[str, Any]:
    def rel(t: float | None) -> int | None:
        return None if t is None or s.stimulus_at is None else round((t - s.stimulus_at) * 1000)

    entry = meta.get(s.case.name, {})
    return {
        "mode": s.case.mode,
        "kind": s.case.kind,
        "clip": s.case.name,
        "voice_ms": entry.get("voice_ms"),
        "after_s": s.after_s,
        "audio_interrupted_ms": [rel(t) for t in s.interrupted_at],  # from the stimulus
        "interruptions": s.interruptions,
        "interruptions_in_answer": s.interruptions_in_answer,
        "speech_started": s.speech_started,
        "cut": s.cut,
        "responses": [
            {"status": r.get("status"), "audio_ms": round(r["audio_ms"])}
            for r in s.responses.values()
        ],
        "invalid_ga_events": s.invalid_events,
        "sdk_errors": s.sdk_errors[:3],
        "timeout": s.timeout,
        "client_late_ms": round(s.late_ms),
        "error": s.error,
    }


def _terminated(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--corpus", default=str(ROOT.parent / "shared" / "corpus" / "dev"))
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--modes", default=",".join(MODES), help=f"of {', '.join(MODES)}")
    ap.add_argument("--concurrency", type=int, default=5)
    ap.add_argument(
        "--only", default=None, help="run only clips whose name contains one of these (a,b)"
    )
    ap.add_argument("--reply-ms", type=int, default=6000, help="the backends' answer length")
    ap.add_argument("--seed", type=int, default=0, help="draws when each clip starts")
    ap.add_argument("--out", default=None, help="also write the JSON result to this file")
    args = ap.parse_args()
    # The SDK logs each event it cannot parse (passthrough's); they are counted instead.
    logging.getLogger("openai.agents").setLevel(logging.CRITICAL)
    modes = args.modes.split(",")
    if unknown := [m for m in modes if m not in MODES]:
        ap.error(f"unknown modes {unknown}; known: {list(MODES)}")
    corpus = Path(args.corpus)
    prompt = read_wav(corpus / prompt_clip(corpus))
    cases = interleaved(build_cases(corpus, modes))
    if args.only:
        cases = [c for c in cases if any(part in c.name for part in args.only.split(","))]
    meta = {str(c["file"]).removesuffix(".wav"): c for c in manifest(corpus)}
    meta |= {str(c["file"]): c for c in manifest(corpus)}
    signal.signal(signal.SIGTERM, _terminated)  # stop the backends and proxy as on Ctrl-C
    load_before = os.getloadavg()
    with stack(modes, args.reply_ms) as base:
        sessions = asyncio.run(
            run_all(base, cases, prompt, args.concurrency, args.seed, args.reply_ms)
        )
    table = summarize(sessions, modes, args.reply_ms)
    result = {
        "summary": table,
        "corpus": str(corpus),
        "modes": {m: {"backend": MODES[m][0], "ga_passthrough": MODES[m][1]} for m in modes},
        "concurrency": args.concurrency,
        "reply_ms": args.reply_ms,
        "seed": args.seed,
        "loadavg_before": load_before,
        "loadavg_after": os.getloadavg(),
        "client_late_ms_max": round(max((s.late_ms for s in sessions), default=0.0)),
        "cases": [case_row(s, meta) for s in sessions],
    }
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1))
    print(json.dumps(result, indent=1) if args.json else render(table, modes))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
