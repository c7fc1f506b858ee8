"""CPU of barge_in_emulated's shim alone (the GA relay) per append and per snapshot.

    uv run python bench/relay_cost.py --json
    uv run python bench/relay_cost.py --root OTHER_CHECKOUT --json   # another version

``bench/shim_cost.py`` times the turn-based dialect (``duplex_emulated``); this times
the relay a GA client gets over a duplex upstream that cannot cut its own playback
(``shim/dialects/ga_relay.py``), as ``bench/sessions.py`` drives it: the dev corpus's
clean speech in the same 20 ms appends, each clip followed by 2.5 s of silence in
which the upstream answers for a second (its item added, its audio, its end), a VAD
window per 512 samples given to the VAD (speech where the window is loud: no Silero
here), a tick every 100 ms and a snapshot every 250 ms as a checkpoint takes it (on
the wall clock, serialised). ``--upstream-rate`` sends the answer at another rate
than the client's 24 kHz (labelled ``sample_rate_hz``), so the proxy resamples it, as
it does for vLLM-Omni's duplex-no-barge-in reference at 22050 Hz. No sockets, no
asyncio: ``handle`` and ``snapshot`` on the process's CPU clock, the median of
``--runs``. ``--root`` runs the shim of another checkout under the same replay, to
compare versions side by side.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus" / "dev"
SILENCE_APPENDS = 125  # 2.5 s after each clip, as bench/sessions.py's clients send
ANSWER_AFTER, ANSWER_APPENDS = 15, 50  # the answer: 300 ms after the clip, 1 s long
SNAPSHOT_EVERY = 12  # appends: ~250 ms, [store] checkpoint_interval_s


def _answer(rid: str, step: int, delta: str, rate: int | None) -> list[dict[str, Any]]:
    """The upstream's events ``step`` appends into its answer ``rid``."""
    item = {"id": f"item_{rid}", "type": "message", "role": "assistant"}
    if step == 0:
        return [
            {"type": "response.created", "response": {"id": rid, "status": "in_progress"}},
            {"type": "conversation.item.added", "item": {**item, "status": "in_progress"}},
            {
                "type": "response.output_item.added",
                "response_id": rid,
                "output_index": 0,
                "item": {**item, "status": "in_progress"},
            },
        ]
    if step <= ANSWER_APPENDS:
        ev = {"type": "response.output_audio.delta", "response_id": rid, "item_id": item["id"]}
        labels = {"sample_rate_hz": rate, "format": "pcm16"} if rate else {}
        return [{**ev, "output_index": 0, "content_index": 0, "delta": delta, **labels}]
    if step == ANSWER_APPENDS + 1:
        done = {"type": "response.output_audio.done", "response_id": rid, "item_id": item["id"]}
        return [
            {**done, "output_index": 0, "content_index": 0},
            {"type": "response.done", "response": {"id": rid, "status": "completed"}},
        ]
    return []


def replay(
    frames: list[str], answers: set[int], rate: int | None = None
) -> tuple[float, float, int]:
    """One session through the conversation: (CPU s in ``handle``, in snapshots, count)."""
    import numpy as np
    import orjson

    from shim import snapshot_clock
    from shim.actions import AnalyzeAudio
    from shim.dialects.ga_relay import GaRelaySession
    from shim.inputs import ClientEvent, Tick, UpstreamEvent, VadWindow
    from shim.session import ShimSettings
    from shim.vad_gate import VadParams

    settings = ShimSettings(vad=VadParams(), min_barge_in_ms=200, echo_suppression=True)
    caps = {"supports_barge_in": False, "supports_audio_truncate": True}
    s = GaRelaySession("sess_0123456789abcdef", "m", settings, caps)
    s.bind_upstream({"type": "session.created", "session": {"id": "up-1"}, "resume_token": "t"})
    wave = np.sin(np.arange((rate or 24000) // 50) * 0.3) * 3000  # 20 ms
    delta = base64.b64encode(wave.astype("<i2").tobytes()).decode()
    seq, now, vad_end, n_answer, step = 10, 0.0, 0, 0, -1
    pending = np.zeros(0, dtype=np.float32)
    in_handle = in_snapshot = 0.0
    snapshots = 0
    clock = time.process_time
    for i, raw in enumerate(frames):
        now += 20.0
        if i in answers:
            n_answer, step = n_answer + 1, 0
        ups = _answer(f"resp-{n_answer}", step, delta, rate) if step >= 0 else []
        step = step + 1 if 0 <= step <= ANSWER_APPENDS else -1
        inputs: list[Any] = []
        for ev in ups:
            seq += 1
            ev = {**ev, "server_event_seq": seq}
            inputs.append(UpstreamEvent(ev, orjson.dumps(ev).decode(), now))
        inputs.append(ClientEvent(orjson.loads(raw), raw, now))
        windows = []
        for inp in inputs:
            t0 = clock()
            actions = s.handle(inp)
            in_handle += clock() - t0
            for action in actions:
                if isinstance(action, AnalyzeAudio):
                    pending = np.concatenate((pending, action.samples))
        while pending.size >= 512:  # the VAD's part, untimed
            window, pending = pending[:512], pending[512:]
            vad_end += 512
            loud = float(np.sqrt(np.mean(np.square(window, dtype=np.float64)))) > 0.01
            windows.append(VadWindow(0.9 if loud else 0.05, vad_end, now))
        if i % 5 == 0:
            windows.append(Tick(now))
        t0 = clock()
        for inp in windows:
            s.handle(inp)
        t1 = clock()
        in_handle += t1 - t0
        if i % SNAPSHOT_EVERY == 0:
            orjson.dumps(snapshot_clock.to_wall(s.snapshot(), 1.7e12))
            in_snapshot += clock() - t1
            snapshots += 1
    return in_handle, in_snapshot, snapshots


def measure(runs: int, corpus: Path, rate: int | None = None) -> dict[str, Any]:
    sys.path.insert(0, str(ROOT / "bench"))  # the replay's appends: this checkout's
    from session_load import Clips

    clips = Clips.load(corpus)
    frames: list[str] = []
    answers: set[int] = set()
    for clip in clips.frames:
        frames += clip
        answers.add(len(frames) + ANSWER_AFTER)
        frames += [clips.silence] * SILENCE_APPENDS
    audio_s = len(frames) * 0.02
    per_append, per_snapshot, per_session_s = [], [], []
    for _ in range(runs):
        handle_s, snapshot_s, snapshots = replay(frames, answers, rate)
        per_append.append(1e6 * handle_s / len(frames))
        per_snapshot.append(1e6 * snapshot_s / snapshots)
        per_session_s.append(1e3 * (handle_s + snapshot_s) / audio_s)
    import shim

    return {
        "shim_from": str(Path(shim.__file__).resolve().parent.parent.name),
        "audio_s": round(audio_s, 1),
        "upstream_rate": rate or 24000,
        "relay_cpu_ms_per_session_s": round(statistics.median(per_session_s), 3),
        "handle_us_per_append": round(statistics.median(per_append), 2),
        "snapshot_us": round(statistics.median(per_snapshot), 2),
        "runs_ms_per_session_s": [round(r, 3) for r in per_session_s],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, help="time the shim of this checkout instead")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--upstream-rate", type=int, help="the answer's rate (default: 24 kHz)")
    args = ap.parse_args()
    if args.root is not None and args.root.resolve() != ROOT:
        argv = [sys.executable, __file__, "--runs", str(args.runs), "--json"]
        argv += ["--corpus", str(args.corpus.resolve())]
        argv += ["--upstream-rate", str(args.upstream_rate)] if args.upstream_rate else []
        env = {**os.environ, "PYTHONPATH": str(args.root.resolve())}
        out = subprocess.run(argv, env=env, cwd=args.root, check=True, capture_output=True)
        result = json.loads(out.stdout)
    else:
        result = measure(args.runs, args.corpus, args.upstream_rate)
    result["load_average"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(result) if args.json else result)


if __name__ == "__main__":
    main()
