"""Barge-in benchmark: real sessions through the proxy at real-time pace, GA clients.

    uv run python bench/stimuli.py --out /tmp/heldout --seed 11
    uv run python bench/bargein.py --corpus /tmp/heldout --json
    uv run python bench/bargein.py --corpus /tmp/heldout --sweep 300,450,600,750,900 \
        --plot docs/bargein_sweep.png

For each labelled clip (speech, backchannel, noise, babble, tv; ``bench/bargein_cases.py``)
and each emulated mode (the ``turn`` and ``duplex-no-barge-in`` reference backends behind
the proxy, all real processes on loopback): the user asks a question, the assistant
answers, and one second into the answer the clip is played into the microphone over the
assistant's audio. The client plays the assistant's audio on a real-time clock, as a
speaker would, so it can also feed that audio back into the microphone (echo cases:
-10 dB and -20 dB, 0-250 ms late) for a client with no echo cancellation. And it
behaves like GA clients (the Agents SDK, the realtime console): on
``input_audio_buffer.speech_started`` during the assistant's answer it flushes its
playback and sends ``conversation.item.truncate`` at the played position.

Reported per mode and decision time (``turn_detection.barge_in_decision_ms``, sent by
each session): speech recall (speech clips the client heard as interruptions),
detection delay (speech onset -> ``speech_started``), audio stop delay (onset -> last
assistant audio delta of the cut response), and per class the **client-visible
interruptions** (``speech_started`` while the answer plays: what makes a GA client stop)
and the cuts (responses cancelled). With ``BARGEIN_OVERLAP_EVENTS=1`` the sessions opt in
to ``output_audio_buffer.paused`` / ``resumed`` and each case's notes say when the audio
was held and why it went on.

The modes' cases are taken in turn, so every mode runs beside the others under the same
load. Two things that are not the proxy's timing are reported per case: how far the
client's microphone fell behind real time (``client_late_ms``), and how long the proxy's
threads ran and waited for a CPU per second of the case (``proxy_ran_ms_per_s``,
``proxy_waited_ms_per_s``, Linux): on a machine busy with other work the proxy gets less
CPU than its sessions need and they fall behind real time, seconds by the end of a case
(docs/benchmarks.md, "Seconds behind on a busy machine"); cases over which the proxy was
hardly ever idle are counted per mode (``proxy_starved_cases``) and warned about.
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
from pathlib import Path
from typing import Any

import numpy as np
from bargein_cases import (
    FALSE_CLASSES,
    Case,
    build_cases,
    interleaved,
    prompt_clip,
    read_wav,
)
from bargein_client import STARVED_BUSY, Outcome, run_case
from bargein_report import plot_sweep, render, summarize
from proc_stats import scheduled_ns
from processes import ROOT, proxy_replica, reference_backend, route, stop_all

MODES = {"duplex_emulated": "turn", "barge_in_emulated": "duplex-no-barge-in"}
LATE_MS = 100  # a client whose microphone falls further behind is reported as late


@contextlib.contextmanager
def stack(config: dict[str, Any]) -> Any:
    """Reference backends and the proxy as real processes; yields the proxy URL and pid."""
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
            yield url, proc.pid
        finally:
            stop_all(procs)


async def run_all(
    base: str,
    runs: list[tuple[Case, int | None]],
    prompt: np.ndarray,
    concurrency: int,
    proxy_pid: int | None = None,
) -> list[Outcome]:
    sem = asyncio.Semaphore(concurrency)
    done = 0

    async def one(case: Case, decision_ms: int | None) -> Outcome:
        nonlocal done
        async with sem:
            t0, (ran0, waited0) = time.monotonic(), scheduled_ns(proxy_pid or 0)
            try:
                r = await run_case(f"{base}?model={case.mode}", case, prompt, decision_ms)
            except Exception as exc:  # a failed case is reported, not fatal
                r = Outcome(case, decision_ms, error=f"{type(exc).__name__}: {exc}")
            span_s, (ran, waited) = time.monotonic() - t0, scheduled_ns(proxy_pid or 0)
            if ran > ran0 and span_s > 0:
                r.proxy_ran_ms_s = (ran - ran0) / 1e6 / span_s
                r.proxy_waited_ms_s = (waited - waited0) / 1e6 / span_s
            done += 1
            print(
                f"\r{done}/{len(runs)} {case.mode:18s} {decision_ms} {case.name:24s} "
                f"interrupted={r.interrupted} cut={r.barged}   ",
                end="",
                file=sys.stderr,
            )
            return r

    results = await asyncio.gather(*(one(c, d) for c, d in runs))
    print(file=sys.stderr)
    return list(results)


def _round(v: float | None) -> float | None:
    return None if v is None else round(v, 1)


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--corpus", default=str(ROOT.parent / "shared" / "corpus" / "dev"))
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--concurrency", type=int, default=6)
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--only", default=None, help="run only clips whose name contains this")
    ap.add_argument("--decision-ms", type=int, default=None, help="sessions' decision time")
    ap.add_argument("--sweep", default=None, help="decision times to compare, e.g. 300,600,900")
    ap.add_argument("--plot", default=None, help="write the sweep as a PNG (matplotlib)")
    ap.add_argument("--out", default=None, help="also write the JSON result to this file")
    ap.add_argument(
        "--vad", action="append", default=[], help="override a [vad] key, e.g. threshold=0.6"
    )
    args = ap.parse_args()
    corpus = Path(args.corpus)
    prompt = read_wav(corpus / prompt_clip(corpus))
    cases = interleaved(build_cases(corpus, args.modes.split(",")))
    if args.only:
        cases = [c for c in cases if args.only in c.name]
    decisions: list[int | None] = [args.decision_ms]
    if args.sweep:
        decisions = [int(v) for v in args.sweep.split(",")]
    runs = [(c, d) for d in decisions for c in cases]
    vad = dict(kv.split("=", 1) for kv in args.vad)
    load_before = os.getloadavg()
    with stack(vad) as (base, proxy_pid):
        results = asyncio.run(run_all(base, runs, prompt, args.concurrency, proxy_pid))
    table = summarize(results, list(MODES), decisions, FALSE_CLASSES)
    result = {
        "summary": table,
        "corpus": str(corpus),
        "concurrency": args.concurrency,
        "loadavg_before": load_before,
        "loadavg_after": os.getloadavg(),
        "cases": [
            {
                "mode": r.case.mode,
                "decision_ms": r.decision_ms,
                "kind": r.case.kind,
                "clip": r.case.name,
                "interrupted": r.interrupted,
                "cut": r.barged,
                "detect_ms": r.detect_ms,
                "stop_ms": r.stop_ms,
                "error": r.error,
                "notes": r.notes,
                "client_late_ms": round(r.late_ms),
                "proxy_ran_ms_per_s": _round(r.proxy_ran_ms_s),
                "proxy_waited_ms_per_s": _round(r.proxy_waited_ms_s),
            }
            for r in results
        ],
        "client_late_ms_max": round(max((r.late_ms for r in results), default=0.0)),
        "client_late_cases": sum(r.late_ms > LATE_MS for r in results),
        "proxy_starved_cases": {
            m: sum(r.starved for r in results if r.case.mode == m) for m in MODES
        },
        "vad": vad,
    }
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1))
    if result["client_late_cases"]:
        print(
            f"warning: the client's microphone fell over {LATE_MS} ms behind real time in "
            f"{result['client_late_cases']} cases (at worst {result['client_late_ms_max']} ms):"
            " their echo came back late, as no real client's does",
            file=sys.stderr,
        )
    if starved := sum(result["proxy_starved_cases"].values()):
        print(
            f"warning: the proxy ran or waited for a CPU {STARVED_BUSY:.0%} of the time or more"
            f" in {starved} cases: the machine was busy with other work, and their sessions"
            " fell behind real time",
            file=sys.stderr,
        )
    if args.plot:
        plot_sweep(table, Path(args.plot))
    print(json.dumps(result, indent=1) if args.json else render(table))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
