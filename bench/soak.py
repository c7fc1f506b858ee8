"""Soak: many sessions for a long time, with faults, on two replicas and one Redis.

    uv run python bench/soak.py                      # 24 sessions, 10 minutes
    uv run python bench/soak.py --smoke --json       # 30 s
    uv run python bench/soak.py --sessions 24 --seconds 300 --json

Everything runs for real on loopback: a ``redis-server`` (append-only file, so a
restart keeps the sessions, as a production Redis does), the reference backends
(``turn`` and ``duplex-no-barge-in``) and two proxy replicas (``python -m proxy
serve``) sharing the Redis store. N clients talk for the whole run: each streams a
speech clip from the dev corpus at real-time pace, waits for the answer, acks, and
goes again. Faults, at random:

* per turn: the client cuts its connection in the middle of the answer and resumes
  on a random replica; or floods the session with appends (hundreds of 20 ms frames
  at once); or stops reading for a few seconds (a slow reader; the proxy may drop it,
  and then it resumes);
* in the background: a reference backend is killed (SIGKILL) and restarted on its
  port; Redis is restarted (SIGTERM, then started again on its port).

Reported, per replica, sampled over time from ``/proc``: RSS and open file
descriptors, and from ``/metrics`` the ``duplex_proxy_sessions_active`` and
``duplex_proxy_asyncio_tasks`` gauges, with the growth after the
warm-up (the first fifth of the run). Per session, by ``server_event_seq`` across
every resume (as bench/resume.py checks): events lost, duplicated, out of order.
Targets: RSS and fds flat after warm-up, 0 lost, 0 duplicated. Every process started
here is stopped on the way out.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pybase64
from processes import (
    BACKEND_MAX_SESSIONS,
    QUIET,
    ROOT,
    free_port,
    proxy_replica,
    read_clip,
    redis_argv,
    resume_event,
    route,
    stop_all,
    wait_port,
)

CORPUS = ROOT.parent / "shared/corpus/dev"
KINDS = ("turn", "duplex-no-barge-in")
RATE = 24000
CHUNK_MS = 40
RECV_TIMEOUT_S = 30.0
TURN_TIMEOUT_S = 20.0  # a turn with no response.done by then is counted stalled


# ---------------------------------------------------------------------- processes


def _pings(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(64).startswith(b"+PONG")
    except OSError:
        return False


@dataclass
class Restartable:
    """A process on a fixed port that can be killed and started again there."""

    name: str
    argv: list[str]
    port: int
    env: dict[str, str]
    ready: str  # "port" or "redis"
    proc: subprocess.Popen[bytes] | None = None
    restarts: int = 0

    def start(self) -> None:
        self.proc = subprocess.Popen(self.argv, cwd=ROOT, env=self.env, **QUIET)
        if self.ready == "redis":
            deadline = time.monotonic() + 10
            while not _pings(self.port):
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise RuntimeError(f"{self.name} did not start")
                time.sleep(0.02)
        else:
            wait_port(self.port, self.proc, 30, self.name)

    def stop(self, sig: signal.Signals) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def restart(self, sig: signal.Signals, down_s: float) -> None:
        self.stop(sig)
        time.sleep(down_s)
        self.start()
        self.restarts += 1


@dataclass
class Stack:
    redis: Restartable
    backends: dict[str, Restartable]
    replicas: list[subprocess.Popen[bytes]]
    bases: list[str]


@contextlib.contextmanager
def stack(reply_ms: int, workdir: Path, logs: Path | None = None) -> Iterator[Stack]:
    env = {**os.environ, "DUPLEX_PROXY__SERVER__LOG_LEVEL": "warning"}
    owned: list[Restartable] = []
    replicas: list[subprocess.Popen[bytes]] = []
    try:
        rport = free_port()
        argv = redis_argv(rport, "--appendonly", "yes", "--appendfsync", "everysec")
        argv += ["--dir", str(workdir)]
        redis = Restartable("redis-server", argv, rport, env, "redis")
        owned.append(redis)
        redis.start()
        backends: dict[str, Restartable] = {}
        for kind in KINDS:
            port = free_port()
            argv = [sys.executable, "-m", "proxy", "reference-backend", "--mode", kind]
            argv += ["--port", str(port), "--reply-ms", str(reply_ms), "--log-level", "warning"]
            argv += ["--max-sessions", str(BACKEND_MAX_SESSIONS)]
            backends[kind] = Restartable(f"reference {kind}", argv, port, env, "port")
            owned.append(backends[kind])
            backends[kind].start()
        config = workdir / "proxy.toml"
        routes = [route(k, f"ws://127.0.0.1:{b.port}/v1/realtime") for k, b in backends.items()]
        config.write_text(
            f'[server]\nlog_level = "warning"\n[auth]\nmode = "none"\n'
            f'[store]\nurl = "redis://127.0.0.1:{rport}/0"\n\n' + "\n".join(routes)
        )
        bases = []
        replica_env = {k: v for k, v in env.items() if k != "DUPLEX_PROXY__SERVER__LOG_LEVEL"}
        if logs is not None:
            logs.mkdir(parents=True, exist_ok=True)
            replica_env["DUPLEX_PROXY__SERVER__LOG_LEVEL"] = "info"
        for i in range(2):
            out = subprocess.DEVNULL if logs is None else (logs / f"replica{i}.log").open("wb")
            proc, url = proxy_replica(config, replica_env, out)
            replicas.append(proc)
            bases.append(url)
        yield Stack(redis, backends, replicas, bases)
    finally:
        stop_all(replicas)
        for proc in reversed(owned):
            proc.stop(signal.SIGTERM)


# ---------------------------------------------------------------------- sampling


def rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        return None
    return None


def fd_count(pid: int) -> int | None:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None


async def gauges(http: aiohttp.ClientSession, base: str) -> tuple[float | None, float | None]:
    """Sessions active and asyncio tasks alive, off the replica's ``/metrics``."""
    url = base.replace("ws://", "http://").replace("/v1/realtime", "/metrics")
    try:
        async with http.get(url, timeout=aiohttp.ClientTimeout(total=3)) as resp:
            text = await resp.text()
    except (aiohttp.ClientError, TimeoutError):
        return None, None
    active, tasks = 0.0, None
    for line in text.splitlines():
        if line.startswith("duplex_proxy_sessions_active{"):
            active += float(line.rsplit(" ", 1)[1])
        elif line.startswith("duplex_proxy_asyncio_tasks "):
            tasks = float(line.rsplit(" ", 1)[1])
    return active, tasks


@dataclass
class Samples:
    t: list[float] = field(default_factory=list)
    rss: list[list[float | None]] = field(default_factory=list)  # per replica
    fds: list[list[int | None]] = field(default_factory=list)
    active: list[list[float | None]] = field(default_factory=list)
    tasks: list[list[float | None]] = field(default_factory=list)


async def sample_loop(stk: Stack, samples: Samples, every_s: float, t0: float) -> None:
    n = len(stk.replicas)
    samples.rss = [[] for _ in range(n)]
    samples.fds = [[] for _ in range(n)]
    samples.active = [[] for _ in range(n)]
    samples.tasks = [[] for _ in range(n)]
    async with aiohttp.ClientSession() as http:
        while True:
            samples.t.append(round(time.monotonic() - t0, 1))
            for i, proc in enumerate(stk.replicas):
                samples.rss[i].append(rss_mb(proc.pid))
                samples.fds[i].append(fd_count(proc.pid))
                active, tasks = await gauges(http, stk.bases[i])
                samples.active[i].append(active)
                samples.tasks[i].append(tasks)
            await asyncio.sleep(every_s)


# ---------------------------------------------------------------------- faults


@dataclass
class Faults:
    client_cuts: int = 0
    floods: int = 0
    slow_readers: int = 0
    dropped_by_proxy: int = 0
    upstream_kills: int = 0
    redis_restarts: int = 0
    timeline: list[list[Any]] = field(default_factory=list)  # [seconds into the run, what]


async def fault_loop(
    stk: Stack, faults: Faults, rng: random.Random, every_s: float, t0: float
) -> None:
    """Kill and restart an upstream, or restart Redis, every ``every_s`` on average."""
    while True:
        await asyncio.sleep(rng.uniform(0.5, 1.5) * every_s)
        at = round(time.monotonic() - t0, 1)
        if rng.random() < 0.5:
            kind = rng.choice(KINDS)
            await asyncio.to_thread(stk.backends[kind].restart, signal.SIGKILL, 0.5)
            faults.upstream_kills += 1
            faults.timeline.append([at, f"upstream {kind} killed and restarted"])
        else:
            await asyncio.to_thread(stk.redis.restart, signal.SIGTERM, 1.0)
            faults.redis_restarts += 1
            faults.timeline.append([at, "redis restarted"])


# ---------------------------------------------------------------------- one client


@dataclass
class Outcome:
    kind: str
    sessions: int = 0  # sessions opened (a new one after a failed resume)
    turns: int = 0
    stalled_turns: int = 0
    responses: dict[str, int] = field(default_factory=dict)
    resumes: int = 0
    resume_failures: list[str] = field(default_factory=list)
    drops: dict[str, int] = field(default_factory=dict)  # why the proxy ended a connection
    reopen_retries: int = 0
    resume_hangs: int = 0
    hang_at: list[list[Any]] = field(default_factory=list)  # [seconds, replica, session]
    not_resumable: int = 0  # opened while the store was down: no resume token
    events: int = 0
    lost: int = 0
    duplicated: int = 0
    out_of_order: int = 0
    error: str | None = None


class Client:
    """One client for the whole run: a session, resumed across every cut and drop.

    A reader task takes every event (checking ``server_event_seq``) and is the one that
    reconnects: at a planned cut, or when the proxy dropped the connection.
    """

    def __init__(
        self, idx: int, kind: str, bases: list[str], clip: bytes, rng: random.Random
    ) -> None:
        self.idx, self.kind, self.bases, self.clip, self.rng = idx, kind, bases, clip, rng
        self.out = Outcome(kind)
        self.faults = Faults()
        self.http: aiohttp.ClientSession | None = None
        self.ws: aiohttp.ClientWebSocketResponse | None = None
        self.connected = asyncio.Event()
        self.changed = asyncio.Event()
        self.sid, self.token = "", ""
        self.last, self.expect = 0, 1
        self.seen: set[int] = set()
        self.done_seen = 0
        self.cut_after: int | None = None  # planned cut after this many response events
        self.in_response = 0
        self.stall_s = 0.0  # the reader stops reading this long, once
        self.finishing = False
        self.last_error = ""  # the last error code received on this connection
        self.reader: asyncio.Task[None] | None = None
        self.t0 = time.monotonic()

    async def _open(self) -> None:
        assert self.http is not None
        base = self.rng.choice(self.bases)
        self.ws = await self.http.ws_connect(f"{base}?model={self.kind}", max_msg_size=0)
        first = await self._recv()
        if first.get("type") != "session.created":
            raise ConnectionError(f"no session.created: {json.dumps(first)[:200]}")
        # No resume_token while the store is down: that session cannot be resumed.
        self.sid, self.token = first["session"]["id"], first.get("resume_token", "")
        self.last, self.expect, self.seen = 0, 1, set()
        self.out.sessions += 1
        self.last_error = ""
        self.connected.set()

    async def _recv(self) -> dict[str, Any]:
        assert self.ws is not None
        msg = await self.ws.receive(timeout=RECV_TIMEOUT_S)
        if msg.type != aiohttp.WSMsgType.TEXT:
            raise ConnectionError(f"socket ended ({msg.type.name}, {self.ws.close_code})")
        ev: dict[str, Any] = json.loads(msg.data)
        if ev.get("type") == "error":
            self.last_error = str((ev.get("error") or {}).get("code"))
        seq = ev.get("server_event_seq")
        if isinstance(seq, int):
            self._check(seq, ev)
        return ev

    def _check(self, seq: int, ev: dict[str, Any]) -> None:
        if seq in self.seen:
            self.out.duplicated += 1
            return
        if seq != self.expect:
            self.out.out_of_order += 1
            if seq > self.expect:
                self.out.lost += seq - self.expect
        self.seen.add(seq)
        self.last = max(self.last, seq)
        self.expect = seq + 1
        self.out.events += 1
        if ev.get("type") == "response.done":
            self.done_seen += 1
            status = str((ev.get("response") or {}).get("status"))
            self.out.responses[status] = self.out.responses.get(status, 0) + 1

    async def send(self, event: dict[str, Any]) -> None:
        if self.reader is not None and self.reader.done():
            self.reader.result()  # raises what ended it
            raise ConnectionError("reader ended")
        # The reader may be resuming (bounded) and then opening anew (bounded).
        await asyncio.wait_for(self.connected.wait(), 3 * RECV_TIMEOUT_S)
        assert self.ws is not None
        with contextlib.suppress(ConnectionError, RuntimeError, aiohttp.ClientError):
            await self.ws.send_str(json.dumps(event))

    async def _resume(self) -> None:
        """A new connection to a random replica, ``session.resume`` first; a new session
        if the old one cannot be resumed (counted as a resume failure)."""
        assert self.http is not None
        self.connected.clear()
        if self.ws is not None:
            await self.ws.close()
        if not self.token:
            self.out.not_resumable += 1
            await self._reopen()
            return
        base = self.rng.choice(self.bases)
        self.ws = await self.http.ws_connect(base, max_msg_size=0)
        await self.ws.send_str(json.dumps(resume_event(self.sid, self.token, self.last)))
        try:
            first = await self._recv()
        except TimeoutError:
            self.out.resume_hangs += 1
            self.out.hang_at.append([round(time.monotonic() - self.t0, 1), base, self.sid])
            first = {"type": f"(no answer to session.resume in {RECV_TIMEOUT_S:.0f} s)"}
        except ConnectionError as exc:
            first = {"type": f"(connection ended: {exc})"}
        if first.get("type") != "session.resumed":
            self.out.resume_failures.append(json.dumps(first)[:200])
            await self.ws.close()
            await self._reopen()
            return
        self.out.resumes += 1
        self.token = first["resume_token"]
        self.expect = self.last + 1
        self.connected.set()

    async def _reopen(self) -> None:
        """A new session; retried while the route's upstream restarts (bounded)."""
        deadline = time.monotonic() + RECV_TIMEOUT_S
        while True:
            try:
                await self._open()
                return
            except (ConnectionError, TimeoutError, aiohttp.ClientError):
                if time.monotonic() > deadline:
                    raise
                self.out.reopen_retries += 1
                await asyncio.sleep(0.5)

    async def _read(self) -> None:
        try:
            while True:
                if self.stall_s:
                    stall, self.stall_s = self.stall_s, 0.0
                    await asyncio.sleep(stall)
                try:
                    ev = await self._recv()
                except (ConnectionError, TimeoutError, aiohttp.ClientError):
                    if self.finishing:
                        return
                    self.faults.dropped_by_proxy += 1
                    code = self.ws.close_code if self.ws is not None else None
                    why = f"close {code} after {self.last_error or 'no error'}"
                    self.out.drops[why] = self.out.drops.get(why, 0) + 1
                    await self._resume()
                    continue
                kind = str(ev.get("type"))
                if kind.startswith("response.") and "server_event_seq" in ev:
                    self.in_response += 1
                    if self.cut_after is not None and self.in_response >= self.cut_after:
                        self.cut_after = None
                        self.faults.client_cuts += 1
                        await self._resume()
                self.changed.set()
        finally:
            self.changed.set()

    async def _turn(self, reader: asyncio.Task[None]) -> None:
        self.out.turns += 1
        target = self.done_seen + 1
        self.in_response = 0
        roll = self.rng.random()
        if roll < 0.25:
            self.cut_after = self.rng.randint(1, 30)
        elif roll < 0.35:
            self.faults.floods += 1
            silence = pybase64.b64encode(b"\0\0" * (RATE // 50)).decode()
            for _ in range(self.rng.randint(200, 600)):
                await self.send({"type": "input_audio_buffer.append", "audio": silence})
        elif roll < 0.45:
            self.faults.slow_readers += 1
            self.stall_s = self.rng.uniform(2.0, 6.0)
        step = RATE * 2 * CHUNK_MS // 1000
        pcm = self.clip + b"\0\0" * (RATE * 900 // 1000)
        t0 = time.monotonic()
        for n, i in enumerate(range(0, len(pcm), step)):
            chunk = pybase64.b64encode(pcm[i : i + step]).decode()
            await self.send({"type": "input_audio_buffer.append", "audio": chunk})
            await asyncio.sleep(max(0.0, t0 + (n + 1) * CHUNK_MS / 1000 - time.monotonic()))
        try:
            async with asyncio.timeout(TURN_TIMEOUT_S):
                while self.done_seen < target:
                    if reader.done():
                        reader.result()
                        raise ConnectionError("reader ended")
                    self.changed.clear()
                    await self.changed.wait()
        except TimeoutError:
            self.out.stalled_turns += 1
        self.cut_after = None
        await self.send({"type": "session.event_ack", "server_event_seq": self.last})

    async def run(self, deadline: float) -> Outcome:
        reader: asyncio.Task[None] | None = None
        try:
            async with aiohttp.ClientSession() as self.http:
                await self._reopen()
                reader = self.reader = asyncio.create_task(self._read())
                while time.monotonic() < deadline:
                    await self._turn(reader)
                self.finishing = True
                if self.ws is not None:
                    await self.ws.close()
        except Exception as exc:  # a failed client is reported, not fatal
            where = " <- ".join(
                f"{f.name}:{f.lineno}" for f in reversed(traceback.extract_tb(exc.__traceback__))
            )
            self.out.error = (
                f"{self.sid} at seq {self.last}: {type(exc).__name__}: {exc} ({where})"[:400]
            )
        finally:
            if reader is not None:
                reader.cancel()
                await asyncio.gather(reader, return_exceptions=True)
        return self.out


# ---------------------------------------------------------------------- report


def growth(series: list[Any], warm: int) -> float | None:
    """Last value minus the first value after warm-up (None when not measured)."""
    values = [v for v in series[warm:] if v is not None]
    return round(values[-1] - values[0], 1) if len(values) >= 2 else None


def slope_per_min(t: list[float], series: list[Any], warm: int) -> float | None:
    """Least-squares slope after warm-up, per minute."""
    pts = [(x, y) for x, y in zip(t[warm:], series[warm:], strict=True) if y is not None]
    if len(pts) < 3:
        return None
    mx = sum(x for x, _ in pts) / len(pts)
    my = sum(y for _, y in pts) / len(pts)
    den = sum((x - mx) ** 2 for x, _ in pts)
    return round(60 * sum((x - mx) * (y - my) for x, y in pts) / den, 2) if den else None


def summarize(
    outs: list[Outcome],
    faults: Faults,
    clients: list[Client],
    samples: Samples,
    stk: Stack,
    seconds: float,
    elapsed: float,
) -> dict[str, Any]:
    warm = next((i for i, t in enumerate(samples.t) if t >= seconds / 5), len(samples.t))
    replicas = []
    for i, proc in enumerate(stk.replicas):
        rss, fds, tasks = samples.rss[i], samples.fds[i], samples.tasks[i]
        replicas.append(
            {
                "pid": proc.pid,
                "alive": proc.poll() is None,
                "rss_mb": [[t, v] for t, v in zip(samples.t, rss, strict=True)],
                "fds": [[t, v] for t, v in zip(samples.t, fds, strict=True)],
                "sessions_active": [
                    [t, v] for t, v in zip(samples.t, samples.active[i], strict=True)
                ],
                "tasks": [[t, v] for t, v in zip(samples.t, samples.tasks[i], strict=True)],
                "tasks_after_warmup": tasks[warm] if warm < len(tasks) else None,
                "tasks_end": tasks[-1] if tasks else None,
                "task_growth_after_warmup": growth(tasks, warm),
                "rss_mb_after_warmup": rss[warm] if warm < len(rss) else None,
                "rss_mb_end": rss[-1] if rss else None,
                "rss_growth_mb_after_warmup": growth(rss, warm),
                "rss_slope_mb_per_min_after_warmup": slope_per_min(samples.t, rss, warm),
                "fds_after_warmup": fds[warm] if warm < len(fds) else None,
                "fds_end": fds[-1] if fds else None,
                "fd_growth_after_warmup": growth(fds, warm),
            }
        )
    for c in clients:
        for name in ("client_cuts", "floods", "slow_readers", "dropped_by_proxy"):
            setattr(faults, name, getattr(faults, name) + getattr(c.faults, name))
    responses: dict[str, int] = {}
    drops: dict[str, int] = {}
    for o in outs:
        for status, n in o.responses.items():
            responses[status] = responses.get(status, 0) + n
        for why, n in o.drops.items():
            drops[why] = drops.get(why, 0) + n
    return {
        "clients": len(outs),
        "clients_failed": sum(1 for o in outs if o.error),
        "sessions_opened": sum(o.sessions for o in outs),
        "turns": sum(o.turns for o in outs),
        "stalled_turns": sum(o.stalled_turns for o in outs),
        "responses": responses,
        "resumes": sum(o.resumes for o in outs),
        "resume_failures": sum(len(o.resume_failures) for o in outs),
        "resume_hangs": sum(o.resume_hangs for o in outs),
        "resume_hangs_at": [h for o in outs for h in o.hang_at][:10],
        "not_resumable": sum(o.not_resumable for o in outs),
        "reopen_retries": sum(o.reopen_retries for o in outs),
        "connections_ended_by_proxy": drops,
        "server_events": sum(o.events for o in outs),
        "lost": sum(o.lost for o in outs),
        "duplicated": sum(o.duplicated for o in outs),
        "out_of_order": sum(o.out_of_order for o in outs),
        "per_session": [
            {"kind": o.kind, "events": o.events, "lost": o.lost, "duplicated": o.duplicated}
            for o in outs
        ],
        "faults": {
            **vars(faults),
            "upstream_restarts": {k: b.restarts for k, b in stk.backends.items()},
            "redis_restarts_done": stk.redis.restarts,
        },
        "warmup_s": samples.t[warm] if warm < len(samples.t) else None,
        "replicas": replicas,
        "elapsed_s": round(elapsed, 1),
        "errors": [f"{o.kind}: {o.error}" for o in outs if o.error][:10],
        "resume_failure_samples": [f for o in outs for f in o.resume_failures][:5],
    }


def render(s: dict[str, Any]) -> str:
    lines = [
        f"{s['clients']} clients ({s['clients_failed']} failed), {s['sessions_opened']} sessions,"
        f" {s['turns']} turns ({s['stalled_turns']} stalled) in {s['elapsed_s']} s",
        f"responses {s['responses']}; resumes {s['resumes']} ({s['resume_failures']} refused,"
        f" {s['resume_hangs']} unanswered)",
        f"connections ended by the proxy: {s['connections_ended_by_proxy']}",
        f"server events {s['server_events']}: lost {s['lost']}, duplicated {s['duplicated']},"
        f" out of order {s['out_of_order']}",
        f"faults {s['faults']}",
        "",
        "| replica | RSS MB after warm-up -> end (slope MB/min) | fds after warm-up -> end"
        " | tasks after warm-up -> end |",
        "|---|---|---|---|",
    ]
    for i, r in enumerate(s["replicas"]):
        lines.append(
            f"| {i} | {r['rss_mb_after_warmup']} -> {r['rss_mb_end']}"
            f" ({r['rss_slope_mb_per_min_after_warmup']}) | {r['fds_after_warmup']}"
            f" -> {r['fds_end']} | {r['tasks_after_warmup']} -> {r['tasks_end']} |"
        )
    return "\n".join(lines)


async def run_all(
    stk: Stack, n: int, seconds: float, seed: int, sample_s: float, fault_s: float
) -> dict[str, Any]:
    manifest = json.loads((CORPUS / "manifest.json").read_text())
    files = [
        c["file"] for c in manifest["clips"] if c["kind"] == "speech" and "_clean" in c["file"]
    ]
    clips = [read_clip(CORPUS / f) for f in files]
    rng = random.Random(seed)
    t0 = time.monotonic()
    deadline = t0 + seconds
    samples, faults = Samples(), Faults()
    clients = [
        Client(i, KINDS[i % len(KINDS)], stk.bases, clips[i % len(clips)], random.Random(seed + i))
        for i in range(n)
    ]
    sampler = asyncio.create_task(sample_loop(stk, samples, sample_s, t0))
    faulter = asyncio.create_task(fault_loop(stk, faults, rng, fault_s, t0))

    async def one(c: Client) -> Outcome:
        c.t0 = t0
        await asyncio.sleep(3.0 * c.idx / n)  # arrive over 3 s
        return await c.run(deadline)

    try:
        outs = await asyncio.gather(*(one(c) for c in clients))
    finally:
        faulter.cancel()
        await asyncio.gather(faulter, return_exceptions=True)
    # Let the replicas settle (disconnect grace) before the last sample.
    await asyncio.sleep(min(5.0, sample_s))
    sampler.cancel()
    await asyncio.gather(sampler, return_exceptions=True)
    return summarize(list(outs), faults, clients, samples, stk, seconds, time.monotonic() - t0)


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sessions", type=int, default=24)
    ap.add_argument("--seconds", type=float, default=None, help="run time (default 600)")
    ap.add_argument("--smoke", action="store_true", help="a short run (30 s unless --seconds)")
    ap.add_argument("--reply-ms", type=int, default=1500, help="length of each spoken reply")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--sample-s", type=float, default=None, help="sampling period (default 10)")
    ap.add_argument(
        "--fault-s", type=float, default=None, help="mean time between upstream/Redis faults"
    )
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument(
        "--logs", type=Path, default=None, help="keep each replica's info log in this folder"
    )
    args = ap.parse_args()
    seconds = args.seconds if args.seconds is not None else (30.0 if args.smoke else 600.0)
    sample_s = args.sample_s or (2.0 if args.smoke or seconds < 120 else 10.0)
    fault_s = args.fault_s or (max(5.0, seconds / 4) if args.smoke else 40.0)
    if args.sessions < 1 or seconds <= 0:
        ap.error("--sessions must be >= 1 and --seconds > 0")
    workdir = Path(tempfile.mkdtemp(prefix="dxp-bench-soak-"))
    try:
        with stack(args.reply_ms, workdir, args.logs) as stk:
            summary = asyncio.run(
                run_all(stk, args.sessions, seconds, args.seed, sample_s, fault_s)
            )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    summary["config"] = {
        "sessions": args.sessions,
        "seconds": seconds,
        "reply_ms": args.reply_ms,
        "seed": args.seed,
        "sample_s": sample_s,
        "fault_s": fault_s,
        "replicas": 2,
        "kinds": list(KINDS),
    }
    print(json.dumps(summary) if args.json else render(summary))
    ok = summary["lost"] == summary["duplicated"] == 0 and summary["clients_failed"] == 0
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
