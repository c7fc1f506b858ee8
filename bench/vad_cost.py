"""CPU cost of server-side VAD per session-second: one stream vs many, batched or not.

    uv run python bench/vad_cost.py                 # table
    uv run python bench/vad_cost.py --json          # one JSON object per row
    uv run python bench/vad_cost.py --realtime 5    # also N paced sessions for 5 s
    uv run python bench/vad_cost.py --gaps --quiet-gate-dbfs -60   # with silences, gated
    uv run python bench/vad_cost.py --bookkeeping --root OTHER_CHECKOUT  # another version
    uv run python bench/vad_cost.py --gate-turns --quiet-gate-dbfs -60   # what it changes

CPU is ``time.process_time()`` (all threads of the process, onnxruntime's
included); wall is ``time.perf_counter()``. "flood" feeds every stream as fast as
it can, in 20 ms chunks, in lockstep: the best case for batching. "realtime" paces
each stream at real time with a random phase, as live sessions arrive: batches
then hold only the windows that came in during the previous inference. Batches of
up to ``--inline-rows`` windows run on the event loop's thread, as deployed (the
config's default; 0: all on the VAD thread). ``--gaps`` follows every 4 s of the
signal with 2.5 s of digital silence (as ``bench/sessions.py``'s clients send after
each clip); ``--quiet-gate-dbfs`` sets the runner's ``[vad] quiet_gate_dbfs``. The last
rows are the echo suppressor's cost while assistant audio is playing. ``--bookkeeping``
times only the runner's own Python per window (a model that does nothing: cutting,
batching, stacking, scattering, reporting, with the metrics), 30 streams of 20 ms
appends with every round's windows in one batch, the CPU clock, the least of 5 runs;
``--root`` imports the proxy of another checkout, to compare versions side by side.
``--gate-turns`` runs the dev corpus, each clip after 2.5 s of digital silence (as
``bench/sessions.py`` sends it), through Silero and ``shim/vad_gate.py``'s turn
detection with and without the quiet gate, and lists the events that differ.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import soxr

# --root: the proxy of another checkout, read before its imports below (hence E402).
# ruff: noqa: E402
_pre = argparse.ArgumentParser(add_help=False)
_pre.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1])
sys.path.insert(0, str(_pre.parse_known_args()[0].root.resolve()))

from proxy.config_vad import VadConfig
from proxy.metrics import Metrics
from proxy.vad import RATE_HZ, VadRunner
from shim.echo import EchoSuppressor
from shim.vad_gate import VadGate, VadParams

ROOT = sys.path[0]
CHUNK = RATE_HZ // 50  # 20 ms, a typical client frame


GAPS = False  # --gaps: 2.5 s of digital silence after every 4 s
QUIET_DBFS: float | None = None  # --quiet-gate-dbfs


def audio(seconds: float, seed: int) -> np.ndarray[Any, np.dtype[np.float32]]:
    """Speech-like test signal: content does not change Silero's cost (without the
    quiet gate)."""
    rng = np.random.default_rng(seed)
    n = int(seconds * RATE_HZ)
    t = np.arange(n) / RATE_HZ
    x = 0.1 * np.sin(2 * np.pi * 180 * t) * (
        np.sin(2 * np.pi * 3 * t) > 0
    ) + 0.01 * rng.standard_normal(n)
    if GAPS:
        x[(t % 6.5) >= 4.0] = 0.0
    return x.astype(np.float32)


def row(
    mode: str, streams: int, seconds: float, cpu: float, wall: float, vad: VadRunner | None
) -> dict[str, Any]:
    session_s = streams * seconds
    out: dict[str, Any] = {
        "mode": mode,
        "streams": streams,
        "session_seconds": round(session_s, 1),
        "cpu_ms_per_session_s": round(1000 * cpu / session_s, 3),
        "wall_ms_per_session_s": round(1000 * wall / session_s, 3),
        "realtime_sessions_per_core": round(session_s / cpu) if cpu > 0 else None,
    }
    if vad is not None:
        out["mean_batch"] = round(vad.stats.windows_total / max(1, vad.stats.batches_total), 1)
        # Windows Silero ran, of all cut (the quiet gate answers the rest).
        out["inferred_pct"] = round(
            100 * vad.stats.windows_total / max(1, vad.stats.windows_total + _quiet(vad))
        )
    return out


def _quiet(vad: VadRunner) -> int:
    """Windows the quiet gate answered: none in a checkout from before the gate."""
    return int(getattr(vad.stats, "quiet_total", 0))


def _zero(vad: VadRunner) -> None:
    vad.stats.windows_total = vad.stats.batches_total = 0
    if hasattr(vad.stats, "quiet_total"):  # see _quiet
        vad.stats.quiet_total = 0


def bench_sync(seconds: float, threads: int) -> dict[str, Any]:
    vad = VadRunner(threads=threads, **_gate())
    x, stream = audio(seconds, 0), vad.new_stream()
    vad.process_sync(stream, x[: CHUNK * 10])  # warm up
    _zero(vad)
    c0, w0 = time.process_time(), time.perf_counter()
    for lo in range(0, x.size, CHUNK):
        vad.process_sync(stream, x[lo : lo + CHUNK])
    return row("sync", 1, seconds, time.process_time() - c0, time.perf_counter() - w0, vad)


async def bench_async(
    n: int,
    seconds: float,
    threads: int,
    max_batch: int,
    realtime: bool,
    gather_ms: float = 0.0,
    inline_rows: int = VadConfig().inline_rows,
) -> dict[str, Any]:
    vad = VadRunner(
        threads=threads,
        max_batch=max_batch,
        gather_ms=gather_ms,
        inline_rows=inline_rows,
        **_gate(),
    )
    signals = [audio(seconds, i) for i in range(n)]
    await vad.process(vad.new_stream(), signals[0][: CHUNK * 10])  # warm up
    _zero(vad)
    rng = np.random.default_rng(1)

    async def session(x: np.ndarray[Any, np.dtype[np.float32]]) -> None:
        stream = vad.new_stream()
        start = time.perf_counter() + (rng.random() * 0.02 if realtime else 0.0)
        for k, lo in enumerate(range(0, x.size, CHUNK)):
            if realtime:
                await asyncio.sleep(max(0.0, start + k * 0.02 - time.perf_counter()))
            await vad.process(stream, x[lo : lo + CHUNK])

    c0, w0 = time.process_time(), time.perf_counter()
    await asyncio.gather(*(session(x) for x in signals))
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    await vad.close()
    mode = ("realtime" if realtime else "flood") + ("" if max_batch > 1 else " unbatched")
    mode += f", gather {gather_ms:g} ms" if gather_ms else ""
    mode += f", inline <= {inline_rows}" if inline_rows else ", all on the thread"
    return row(mode, n, seconds, cpu, wall, vad)


def _gate() -> dict[str, Any]:
    """The runner's quiet gate, named only when set (an older checkout has none)."""
    return {} if QUIET_DBFS is None else {"quiet_dbfs": QUIET_DBFS}


async def bookkeeping(rounds: int = 2000, streams: int = 30) -> float:
    """The runner's Python per window, in µs of CPU: a model that does nothing."""
    vad = VadRunner(gather_ms=0, inline_rows=64, metrics=Metrics())

    def nothing(rows: Any, state: Any) -> Any:
        return np.zeros((rows.shape[0], 1), np.float32), state.copy()

    vad._infer = nothing  # type: ignore[method-assign]
    chunk = audio(0.02, 0)
    ss = [vad.new_stream() for _ in range(streams)]
    got = [0]

    def deliver(prob: float, end: int) -> None:
        got[0] += 1

    c0 = time.process_time()
    for _ in range(rounds):
        for s in ss:
            vad.submit(s, chunk, deliver)
        await asyncio.sleep(0)  # the round's batch runs here (no gather)
        await asyncio.sleep(0)
    await asyncio.sleep(0.01)
    cpu = time.process_time() - c0
    await vad.close()
    return 1e6 * cpu / max(1, got[0])


def gate_turns(corpus: Path, dbfs: float) -> dict[str, Any]:
    """Turn events on the dev corpus with and without the quiet gate at ``dbfs``."""
    import wave

    clips = json.loads((corpus / "manifest.json").read_text())["clips"]
    parts = []
    for clip in clips:
        with wave.open(str(corpus / clip["file"])) as w:
            pcm = np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.float32)
        parts += [soxr.resample(pcm / 32768, w.getframerate(), RATE_HZ), np.zeros(40000)]
    x = np.concatenate(parts).astype(np.float32)

    def events(quiet: float | None) -> tuple[list[str], VadRunner]:
        vad = VadRunner(**({} if quiet is None else {"quiet_dbfs": quiet}))
        gate = VadGate(VadParams())
        probs = vad.process_sync(vad.new_stream(), x)
        return [repr(e) for p, end in probs for e in gate.push(p, end)], vad

    (off, plain), (on, gated) = events(None), events(dbfs)
    return {
        "windows": plain.stats.windows_total,
        "inferred_with_gate": gated.stats.windows_total,
        "events": len(off),
        "events_with_gate": len(on),
        "only_without": [e for e in off if e not in on],
        "only_with": [e for e in on if e not in off],
    }


def bench_echo(seconds: float, echo: bool) -> dict[str, Any]:
    """Echo suppressor while assistant audio plays: with echo in the mic, or without
    it (a client with its own echo cancellation: no lock, no per-bin work)."""
    es = EchoSuppressor()
    far = (audio(seconds, 7) * 32767).astype(np.int16)
    es.add_far(far, 0)
    if echo:
        mic = (np.roll(far, 1600) // 4).astype(np.int16)
    else:  # the user's voice, unrelated to the far audio
        mic = (np.random.default_rng(9).standard_normal(far.size) * 800).astype(np.int16)
    c0, w0 = time.process_time(), time.perf_counter()
    for lo in range(0, mic.size, CHUNK):
        es.process(mic[lo : lo + CHUNK], lo)
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    return row("echo, " + ("locked" if echo else "no echo"), 1, seconds, cpu, wall, None)


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=10.0, help="audio per stream (flood)")
    ap.add_argument("--streams", default="1,8,32,64", help="comma-separated stream counts")
    ap.add_argument("--threads", type=int, default=1, help="onnxruntime intra-op threads")
    ap.add_argument(
        "--realtime", type=float, default=0.0, help="seconds of paced sessions (0: skip)"
    )
    ap.add_argument(
        "--gather-ms", type=float, default=0.0, help="also the realtime rows with this wait"
    )
    ap.add_argument(
        "--inline-rows",
        type=int,
        default=VadConfig().inline_rows,
        help="batches of at most this many windows run on the loop's thread (0: none)",
    )
    ap.add_argument("--gaps", action="store_true", help="2.5 s of silence after every 4 s")
    ap.add_argument("--quiet-gate-dbfs", type=float, help="the runner's [vad] quiet_gate_dbfs")
    ap.add_argument("--bookkeeping", action="store_true", help="only the runner's own Python")
    ap.add_argument("--root", type=Path, help="import the proxy of this checkout instead")
    ap.add_argument("--gate-turns", action="store_true", help="turns with and without the gate")
    ap.add_argument("--corpus", type=Path, default=Path(ROOT).parent / "shared/corpus/dev")
    ap.add_argument("--json", action="store_true", help="JSON lines instead of a table")
    args = ap.parse_args()
    global GAPS, QUIET_DBFS
    GAPS, QUIET_DBFS = args.gaps, args.quiet_gate_dbfs
    if args.gate_turns:
        print(json.dumps(gate_turns(args.corpus, QUIET_DBFS or -60.0), indent=1))
        return
    if args.bookkeeping:
        runs = [await bookkeeping() for _ in range(5)]
        print(json.dumps({"root": ROOT, "runner_us_per_window": round(min(runs), 2)}))
        return
    counts = [int(s) for s in args.streams.split(",")]
    rows = [bench_sync(args.seconds, args.threads)]
    for n in counts:
        for max_batch in (64, 1) if n > 1 else (64,):
            rows.append(
                await bench_async(
                    n, args.seconds, args.threads, max_batch, False, 0.0, args.inline_rows
                )
            )
    if args.realtime > 0:
        for gather in sorted({0.0, args.gather_ms}):
            rows += [
                await bench_async(
                    n, args.realtime, args.threads, 64, True, gather, args.inline_rows
                )
                for n in counts
            ]
    rows += [bench_echo(args.seconds, echo=True), bench_echo(args.seconds, echo=False)]
    if args.json:
        for r in rows:
            print(json.dumps(r))
        return
    cols = list(dict.fromkeys([*rows[0], "mean_batch", "inferred_pct"]))
    print("  ".join(f"{c:>22}" for c in cols))
    for r in rows:
        print("  ".join(f"{r.get(c, ''):>22}" for c in cols))


if __name__ == "__main__":
    asyncio.run(main())
