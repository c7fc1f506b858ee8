"""Real servers on loopback for end-to-end tests: reference backends and the proxy.

Everything here runs for real (aiohttp sites on 127.0.0.1, ephemeral ports); only
the GPU model server is replaced, by the reference backends, which follow
vLLM-Omni's wire protocol.
"""

from __future__ import annotations

import asyncio
import json
import wave
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import pybase64
from aiohttp import web

from proxy.app import build_app
from proxy.config import Config, config_from_dict
from proxy.reference.options import ReferenceOptions
from proxy.reference.server import build_reference_app
from proxy.state import ProxyState

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus" / "dev"


@asynccontextmanager
async def serve_app(app: web.Application, port: int = 0) -> AsyncIterator[str]:
    """Run ``app`` on loopback (``port``, or a free one); yields ``http://127.0.0.1:PORT``."""
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=2.0)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", port)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


@asynccontextmanager
async def reference(
    kind: str,
    reply_ms: int = 1500,
    options: ReferenceOptions | None = None,
    served_model: str | None = None,
) -> AsyncIterator[str]:
    """A reference backend; yields its ws:// realtime URL."""
    app = build_reference_app(kind, served_model=served_model, reply_ms=reply_ms, options=options)
    async with serve_app(app) as base:
        yield base.replace("http://", "ws://") + "/v1/realtime"


def proxy_config(upstreams: dict[str, str], **sections: Any) -> Config:
    """One route per model -> upstream (or ``routes=[...]`` given whole), open auth."""
    data: dict[str, Any] = {"routes": [{"model": m, "upstream": u} for m, u in upstreams.items()]}
    # Loopback backends of the test itself: open on purpose unless a test sets [auth].
    data["auth"] = {"mode": "none"}
    data.update(sections)
    return config_from_dict(data)


@asynccontextmanager
async def proxy(config: Config) -> AsyncIterator[str]:
    """The proxy, in process; yields its ``http://127.0.0.1:PORT`` base."""
    async with serve_app(build_app(config)) as base:
        yield base


@asynccontextmanager
async def proxy_with_state(config: Config) -> AsyncIterator[tuple[str, ProxyState]]:
    """The proxy, in process; yields its base and its state."""
    state = ProxyState(config=config)
    async with serve_app(build_app(config, state)) as base:
        yield base, state


@asynccontextmanager
async def replica(config: Config, name: str) -> AsyncIterator[str]:
    """One proxy replica in process; several share a store through ``store.url``."""
    state = ProxyState(config=config, replica_id=name)
    async with serve_app(build_app(config, state)) as base:
        yield base


def store_config(upstream: str, url: str, **store: Any) -> Config:
    """One route, model "m" -> ``upstream``, and the store at ``url``."""
    return proxy_config({"m": upstream}, store={"url": url, **store})


@asynccontextmanager
async def replica_pair(
    kind: str,
    url: str,
    reply_ms: int = 1500,
    options: ReferenceOptions | None = None,
    **store: Any,
) -> AsyncIterator[tuple[str, str]]:
    """A reference backend of ``kind`` behind replicas "a" and "b" that share the store at
    ``url``; yields their bases."""
    async with (
        reference(kind, reply_ms=reply_ms, options=options) as up,
        replica(store_config(up, url, **store), "a") as a,
        replica(store_config(up, url, **store), "b") as b,
    ):
        yield a, b


def ws_url(base: str, model: str | None = "m", path: str = "/v1/realtime", **query: str) -> str:
    url = base.replace("http://", "ws://") + path
    params = ({"model": model} if model else {}) | query
    if params:
        url += "?" + "&".join(f"{k}={v}" for k, v in params.items())
    return url


def load_clip(name: str) -> bytes:
    """PCM16 24 kHz mono bytes of a corpus clip."""
    with wave.open(str(CORPUS / name)) as w:
        assert w.getframerate() == 24000 and w.getsampwidth() == 2
        return w.readframes(w.getnframes())


def silence(ms: int, rate: int = 24000) -> bytes:
    return b"\0\0" * (rate * ms // 1000)


@dataclass
class Client:
    """A small realtime client over aiohttp that keeps every event it received."""

    ws: aiohttp.ClientWebSocketResponse
    events: list[dict[str, Any]] = field(default_factory=list)

    async def send(self, event: dict[str, Any]) -> None:
        await self.ws.send_str(json.dumps(event))

    async def recv(self, timeout: float = 10.0) -> dict[str, Any]:
        msg = await self.ws.receive(timeout=timeout)
        if msg.type != aiohttp.WSMsgType.TEXT:
            raise ConnectionError(f"socket ended: {msg.type} {self.ws.close_code}")
        event: dict[str, Any] = json.loads(msg.data)
        self.events.append(event)
        return event

    async def until(self, kind: str, timeout: float = 15.0) -> dict[str, Any]:
        async with asyncio.timeout(timeout):
            while True:
                event = await self.recv(timeout)
                if event.get("type") == kind:
                    return event

    async def stream(
        self, pcm: bytes, chunk_ms: int = 20, rate: int = 24000, realtime: bool = True
    ) -> None:
        step = rate * 2 * chunk_ms // 1000
        for i in range(0, len(pcm), step):
            chunk = pcm[i : i + step]
            await self.send(
                {"type": "input_audio_buffer.append", "audio": pybase64.b64encode(chunk).decode()}
            )
            if realtime:
                await asyncio.sleep(chunk_ms / 1000)

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("type") == kind]


def resume_of(created: dict[str, Any], last_seq: int = 0) -> dict[str, Any]:
    """``session.resume`` of the session ``created`` announced, from ``last_seq``."""
    return {
        "type": "session.resume",
        "session_id": created["session"]["id"],
        "resume_token": created["resume_token"],
        "last_received_server_event_seq": last_seq,
    }


async def closed(c: Client, within_s: float = 10.0) -> int | None:
    """Read until the socket closes; its close code."""
    async with asyncio.timeout(within_s):
        while True:
            msg = await c.ws.receive()
            if msg.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED):
                return c.ws.close_code
            if msg.type == aiohttp.WSMsgType.TEXT:
                c.events.append(json.loads(msg.data))


def drop(c: Client) -> None:
    """The client's connection ends with no close frame (a network loss, not a hang-up)."""
    c.ws._writer.transport.abort()


@asynccontextmanager
async def connect(url: str) -> AsyncIterator[Client]:
    async with aiohttp.ClientSession() as http, http.ws_connect(url, max_msg_size=0) as ws:
        yield Client(ws)


@asynccontextmanager
async def proxied_client(
    kind: str, reply_ms: int = 1500, server: dict[str, Any] | None = None, **query: str
) -> AsyncIterator[Client]:
    """One client (``query``: its URL's, e.g. ``duplex="1"``) of the proxy in front of a
    reference backend of ``kind``, on route ``m``; ``server``: the proxy's settings."""
    async with reference(kind, reply_ms=reply_ms) as up:
        config = proxy_config({"m": up}, server=server or {})
        async with proxy(config) as base, connect(ws_url(base, **query)) as c:
            yield c


@dataclass
class Link:
    """A TCP relay on loopback in front of a server: cut every connection through it,
    or point it at another server (the upstream restarted), without either end's help."""

    target: tuple[str, int]
    port: int = 0
    _pipes: set[asyncio.StreamWriter] = field(default_factory=set)

    def url(self, ws_url: str) -> str:
        """``ws_url`` (of the target) as reached through this relay."""
        host, port = self.target
        return ws_url.replace(f"{host}:{port}", f"127.0.0.1:{self.port}")

    def cut(self) -> int:
        """Drop every connection through the relay now; how many there were."""
        pipes, self._pipes = self._pipes, set()
        for writer in pipes:
            writer.transport.abort()
        return len(pipes) // 2

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.transport.abort()
            return
        self._pipes |= {writer, up_writer}

        async def pump(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            try:
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                dst.transport.abort()

        await asyncio.gather(pump(reader, up_writer), pump(up_reader, writer))
        self._pipes -= {writer, up_writer}


def host_port(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    assert parts.hostname is not None and parts.port is not None
    return parts.hostname, parts.port


@asynccontextmanager
async def tcp_link(target_url: str) -> AsyncIterator[Link]:
    link = Link(host_port(target_url))
    server = await asyncio.start_server(link._serve, "127.0.0.1", 0)
    link.port = server.sockets[0].getsockname()[1]
    try:
        yield link
    finally:
        link.cut()
        server.close()
        await server.wait_closed()
