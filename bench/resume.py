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
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pybase64
from processes import (
    proxy_replica,
    read_clip,
    reference_backend,
    route,
    start_redis,
    stop_all,
)

CORPUS = Path(__file__).resolve().parents[2] / "shared/corpus/dev"
KINDS = ("turn", "duplex-no-barge-in")
CHUNK_MS = 100
RATE = 24000
RECV_TIMEOUT_S = 20.0
MARK_PADDING_MS = 200  # + the turn: each turn's mark (see ``_turn``)


# ---------------------------------------------------------------------- processes


@contextlib.contextmanager
def stack(
    reply_ms: int, workdir: Path, logs: Path | None = None
) -> Iterator[tuple[list[str], str]]:
    """redis-server, reference backends, two proxy replicas; yields their ws bases."""
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


# ---------------------------------------------------------------------- one session


def _padding(ev: dict[str, Any]) -> int | None:
    """The turn detection's prefix padding a ``session.updated`` reports."""
    session = ev.get("session") or {}
    detection = ((session.get("audio") or {}).get("input") or {}).get("turn_detection") or {}
    padding = detection.get("prefix_padding_ms") if isinstance(detection, dict) else None
    return padding if isinstance(padding, int) else None


@dataclass
class Outcome:
    kind: str
    turns: int = 0
    disconnects: int = 0
    resumes: int = 0
    resumes_other: int = 0
    resume_ms: list[float] = field(default_factory=list)
    resume_ms_other: list[float] = field(default_factory=list)
    slow: list[dict[str, Any]] = field(default_factory=list)
    events: int = 0
    audio_deltas: int = 0
    lost: int = 0
    duplicated: int = 0
    out_of_order: int = 0
    conflicting: int = 0
    updates_sent: int = 0
    updates_resent: int = 0
    applied: Counter[str] = field(default_factory=Counter)
    error: str | None = None


class ResumeRefused(Exception):
    pass


class Session:
    """One client session, across as many connections as its disconnects need.

    A reader task takes every event as it arrives (as a real client does) and checks
    it; it is also the one that drops the connection at the chosen event and resumes.
    The turn task meanwhile speaks, waits for the answer, and acks.
    """

    def __init__(
        self,
        idx: int,
        kind: str,
        bases: list[str],
        clip: bytes,
        quota: int,
        seed: int,
        pace: float,
    ) -> None:
        self.idx = idx
        self.pace = pace
        self.kind = kind
        self.bases = bases
        self.clip = clip
        self.quota = quota
        self.rng = random.Random(seed * 1_000_003 + idx)
        self.out = Outcome(kind)
        self.http: aiohttp.ClientSession | None = None
        self.ws: aiohttp.ClientWebSocketResponse | None = None
        self.connected = asyncio.Event()  # clear while the reader reconnects
        self.changed = asyncio.Event()  # the reader took an event (or ended)
        self.reader: asyncio.Task[None] | None = None
        self.replica = 0
        self.sid = ""
        self.token = ""
        self.last = 0  # highest seq received
        self.expect = 1  # next seq this connection must deliver
        self.seen: dict[int, tuple[str, str]] = {}  # seq -> (event_id, text digest)
        self.ids: set[str] = set()
        self.marks: dict[str, dict[str, Any]] = {}  # event_id -> the session.update
        self.mark_of: dict[int | None, str] = {}  # prefix padding -> the mark's event_id
        self.unanswered: list[str] = []  # mark event ids with no session.updated seen
        self.answered_last: str | None = None
        self.done_seen = 0
        self.cut: int | None = None  # drop the connection after this many response events
        self.in_response = 0
        self.finishing = False

    # ------------------------------------------------------------------ wire
    async def _connect(self, replica: int, query: str) -> aiohttp.ClientWebSocketResponse:
        assert self.http is not None
        self.replica = replica
        return await self.http.ws_connect(f"{self.bases[replica]}?{query}", max_msg_size=0)

    async def send(self, event: dict[str, Any]) -> None:
        """Send on the current connection; what a dropped connection swallows is lost."""
        await self.connected.wait()
        assert self.ws is not None
        with contextlib.suppress(ConnectionError, RuntimeError, aiohttp.ClientError):
            await self.ws.send_str(json.dumps(event))

    async def recv(self) -> dict[str, Any]:
        assert self.ws is not None
        msg = await self.ws.receive(timeout=RECV_TIMEOUT_S)
        if msg.type != aiohttp.WSMsgType.TEXT:
            raise ConnectionError(f"socket ended ({msg.type.name}, {self.ws.close_code})")
        ev: dict[str, Any] = json.loads(msg.data)
        seq = ev.get("server_event_seq")
        if isinstance(seq, int):
            self._check(seq, ev, msg.data)
        return ev

    def _check(self, seq: int, ev: dict[str, Any], text: str) -> None:
        """Exactly once, in order: what this connection must deliver next is ``expect``."""
        digest = (str(ev.get("event_id")), hashlib.sha1(text.encode()).hexdigest())
        if seq in self.seen:
            self.out.duplicated += 1
            if self.seen[seq] != digest:
                self.out.conflicting += 1
            return
        if seq != self.expect:
            self.out.out_of_order += 1
            if seq > self.expect:
                self.out.lost += seq - self.expect
        if digest[0] in self.ids:
            self.out.duplicated += 1  # the same event again under another seq
        self.ids.add(digest[0])
        self.seen[seq] = digest
        self.last = max(self.last, seq)
        self.expect = seq + 1
        self.out.events += 1
        kind = ev.get("type")
        if kind == "response.output_audio.delta":
            self.out.audio_deltas += 1
        elif kind == "response.done":
            self.done_seen += 1
        elif kind == "session.updated":
            eid = self.mark_of.get(_padding(ev))
            if eid is not None:
                self.out.applied[eid] += 1
                if eid in self.unanswered:
                    self.unanswered.remove(eid)
                self.answered_last = eid

    # ------------------------------------------------------------------ reader
    async def _read(self) -> None:
        try:
            while True:
                try:
                    ev = await self.recv()
                except ConnectionError:
                    if self.finishing:
                        return
                    raise
                if str(ev.get("type")).startswith("response.") and "server_event_seq" in ev:
                    self.in_response += 1
                    if self.cut is not None and self.in_response >= self.cut:
                        await self.disconnect_and_resume()
                        # Sometimes drop again in the middle of the replay.
                        self.cut = self._next_cut(again=True)
                        self.in_response = 0
                self.changed.set()
        finally:
            self.changed.set()

    async def wait_until(self, done: Any) -> None:
        async with asyncio.timeout(RECV_TIMEOUT_S * 2):
            while not done():
                assert self.reader is not None
                if self.reader.done():
                    self.reader.result()  # raises what ended it
                    raise ConnectionError("reader ended")
                self.changed.clear()
                await self.changed.wait()

    async def disconnect_and_resume(self) -> None:
        assert self.ws is not None
        self.connected.clear()
        await self.ws.close()
        self.out.disconnects += 1
        replica = self.rng.randrange(len(self.bases))
        other = replica != self.replica
        t0 = time.perf_counter()
        self.ws = await self._connect(replica, "")
        await self.ws.send_str(
            json.dumps(
                {
                    "type": "session.resume",
                    "session_id": self.sid,
                    "resume_token": self.token,
                    "last_received_server_event_seq": self.last,
                }
            )
        )
        first = await self.recv()
        if first.get("type") != "session.resumed":
            raise ResumeRefused(json.dumps(first)[:300])
        ms = (time.perf_counter() - t0) * 1000
        self.out.resumes += 1
        self.out.resume_ms.append(ms)
        if other:
            self.out.resumes_other += 1
            self.out.resume_ms_other.append(ms)
        self.out.slow.append(
            {"ms": round(ms, 1), "other_replica": other, "session": self.sid, "seq": self.last}
        )
        self.token = first["resume_token"]
        self.expect = self.last + 1
        self.connected.set()
        # Re-send what was not answered, and one that was: it must be dropped.
        again = list(self.unanswered)
        if self.answered_last is not None and self.rng.random() < 0.5:
            again.insert(0, self.answered_last)
        for eid in again:
            self.out.updates_resent += 1
            await self.send(self.marks[eid])

    def _next_cut(self, again: bool = False) -> int | None:
        left = self.quota - self.out.disconnects
        if left <= 0 or self.rng.random() > (0.3 if again else 0.9):
            return None
        return self.rng.randint(1, 40)

    # ------------------------------------------------------------------ run
    async def run(self, deadline: float) -> Outcome:
        try:
            async with aiohttp.ClientSession() as self.http:
                await self._run(deadline)
        except Exception as exc:  # a failed session is reported, not fatal
            where = f"{self.sid} at seq {self.last}, turn {self.out.turns}"
            if self.unanswered:
                where += f", unanswered {self.unanswered}"
            self.out.error = f"{where}: {type(exc).__name__}: {exc}"[:300]
        finally:
            if self.reader is not None:
                self.reader.cancel()
                await asyncio.gather(self.reader, return_exceptions=True)
            self.http = None
        return self.out

    async def _run(self, deadline: float) -> None:
        self.ws = await self._connect(self.rng.randrange(len(self.bases)), f"model={self.kind}")
        first = await self.recv()
        if first.get("type") != "session.created" or "resume_token" not in first:
            raise RuntimeError(f"unexpected first event {json.dumps(first)[:200]}")
        self.sid, self.token = first["session"]["id"], first["resume_token"]
        self.connected.set()
        self.reader = asyncio.create_task(self._read())
        max_turns = self.quota + 3
        while self.out.turns < max_turns and time.monotonic() < deadline:
            if self.out.disconnects >= self.quota and self.out.turns >= 1:
                break
            await self._turn()
        await self.wait_until(lambda: not self.unanswered)
        await self.send({"type": "session.event_ack", "server_event_seq": self.last})
        self.finishing = True
        assert self.ws is not None
        await self.ws.close()

    async def _turn(self) -> None:
        self.out.turns += 1
        eid = f"evt_{self.idx}_{self.out.turns}"
        # The mark is a setting every upstream kind keeps (a turn-based one takes no
        # instructions): the turn detection's prefix padding, one value per turn.
        padding = MARK_PADDING_MS + self.out.turns
        self.mark_of[padding] = eid
        detection = {"type": "server_vad", "prefix_padding_ms": padding}
        self.marks[eid] = {
            "type": "session.update",
            "event_id": eid,
            "session": {"type": "realtime", "audio": {"input": {"turn_detection": detection}}},
        }
        self.unanswered.append(eid)
        self.out.updates_sent += 1
        await self.send(self.marks[eid])
        target = self.done_seen + 1
        self.in_response, self.cut = 0, self._next_cut()
        step = RATE * 2 * CHUNK_MS // 1000
        pcm = self.clip + b"\0\0" * (RATE * 900 // 1000)
        t0 = time.monotonic()
        for n, i in enumerate(range(0, len(pcm), step)):
            chunk = pybase64.b64encode(pcm[i : i + step]).decode()
            await self.send({"type": "input_audio_buffer.append", "audio": chunk})
            if self.pace > 0:  # a microphone: real time (pace 1) or faster
                await asyncio.sleep(
                    max(0.0, t0 + (n + 1) * CHUNK_MS / 1000 / self.pace - time.monotonic())
                )
        await self.wait_until(lambda: self.done_seen >= target)
        self.cut = None
        # Let the replay logs shrink, as a well-behaved client does.
        await self.send({"type": "session.event_ack", "server_event_seq": self.last})


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
        "sessions_failed": sum(1 for o in outs if o.error),
        "turns": sum(o.turns for o in outs),
        "disconnects": sum(o.disconnects for o in outs),
        "resumes": sum(o.resumes for o in outs),
        "resumes_other_replica": sum(o.resumes_other for o in outs),
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
) -> list[Outcome]:
    manifest = json.loads((CORPUS / "manifest.json").read_text())
    files = [
        c["file"] for c in manifest["clips"] if c["kind"] == "speech" and "_clean" in c["file"]
    ]
    clips = [read_clip(CORPUS / f) for f in files]
    deadline = time.monotonic() + time_limit
    per, extra = divmod(disconnects, n)
    sessions = [
        Session(
            i, KINDS[i % len(KINDS)], bases, clips[i % len(clips)], per + (i < extra), seed, pace
        )
        for i in range(n)
    ]
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
    ap.add_argument("--time-limit", type=float, default=600.0, help="seconds, for the whole run")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--logs", type=Path, default=None, help="keep the replicas' logs here")
    args = ap.parse_args()
    if args.sessions < 1 or args.disconnects < 0:
        ap.error("--sessions must be >= 1 and --disconnects >= 0")
    workdir = Path(tempfile.mkdtemp(prefix="dxp-bench-resume-"))
    try:
        with stack(args.reply_ms, workdir, args.logs) as (bases, _):
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
        "replicas": 2,
        "kinds": list(KINDS),
    }
    print(json.dumps(summary, indent=2) if args.json else render(summary))
    ok = (
        summary["lost"] == summary["duplicated"] == summary["out_of_order"] == 0
        and summary["sessions_failed"] == 0
        and summary["client_events"]["applied_twice"] == 0
        and summary["client_events"]["never_applied"] == 0
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
