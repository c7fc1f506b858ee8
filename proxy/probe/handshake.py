"""Open a session on any realtime endpoint, whichever way it wants to be opened.

How vLLM-Omni 0.30 and GA servers open sessions:

* ask for duplex first (``?duplex=1&model=M``); a server without a duplex adapter
  answers ``{"type":"error","code":"unsupported"}`` and closes 1008: retry the URL
  without ``duplex``;
* a GA server (and the turn-based one) sends ``session.created`` at once; a
  vLLM-Omni duplex server waits for the client's first ``session.update``. So:
  listen briefly; if the server spoke, answer in its dialect, else speak first;
* a flat ``session.created {id, created}`` is the turn-based dialect, which takes
  ``session.update{model}`` at the top level and nothing else;
* resume: ``session.resume`` must be the first event of a new connection
  (``autostart=0`` so a vLLM-Omni server does not open a fresh session first);
* input format: PCM16 at 24 kHz, unless a session opened before the probe spoke
  declares ``pcm_f32le`` input (a model that reads only float, such as PersonaPlex,
  behind a route that opens it so): then the probe keeps that format and speaks it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import aiohttp

from proxy.probe.client import Event, ProbeConnection, SessionInfo, error_message
from proxy.upstream_opening import with_query
from shim.audio import AudioFormat
from shim.upstream_input import declared_float_input
from shim.wire import error_code

SERVER_FIRST_WAIT_S = 0.25
REALTIME_RATE = 24000


class OpenFailed(Exception):
    """No session: ``code`` is the endpoint's error code (or a probe one), if any."""

    def __init__(self, message: str, code: str | None = None, close_code: int | None = None):
        super().__init__(message)
        self.code = code
        self.close_code = close_code


@dataclass(frozen=True, slots=True)
class Target:
    url: str
    model: str | None = None
    open_timeout_s: float = 10.0


@dataclass(frozen=True, slots=True)
class ResumeRequest:
    session_id: str
    resume_token: str
    last_seq: int
    url: str


def realtime_session(
    model: str | None, turn_detection: bool, input_format: AudioFormat | None = None
) -> dict[str, Any]:
    """pcm16 at 24 kHz (or the float ``input_format``) declared both ways: GA
    ``audio.*.format`` and vLLM-Omni's flat keys."""
    pcm = {"type": "audio/pcm", "rate": REALTIME_RATE}
    audio_in: dict[str, Any] = {"format": dict(pcm)}
    session: dict[str, Any] = {
        "type": "realtime",
        "audio": {"input": audio_in, "output": {"format": dict(pcm)}},
        "input_audio_format": "pcm16",
        "output_audio_format": "pcm16",
        "sample_rate_hz": REALTIME_RATE,
    }
    if input_format is not None:
        audio_in["format"] = {"type": "audio/pcm_f32le", "rate": input_format.rate_hz}
        session["input_audio_format"] = "pcm_f32le"
        session["sample_rate_hz"] = input_format.rate_hz
    if turn_detection:
        audio_in["turn_detection"] = {"type": "server_vad"}
        session["turn_detection"] = {"type": "server_vad"}
    if model:
        session["model"] = model
    return session


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def session_info(created: dict[str, Any], url: str) -> SessionInfo:
    session = created.get("session")
    if not isinstance(session, dict):
        sid = created.get("id")
        return SessionInfo(
            "turn", created, session_id=sid if isinstance(sid, str) else None, url=url
        )
    caps = session.get("capabilities")
    sid = session.get("id") or session.get("session_id") or created.get("session_id")
    token = created.get("resume_token")
    audio = session.get("audio")
    output = audio.get("output") if isinstance(audio, dict) else None
    fmt = output.get("format") if isinstance(output, dict) else None
    rate = _int(fmt.get("rate")) if isinstance(fmt, dict) else None
    if rate is None and isinstance(output, dict):
        rate = _int(output.get("sample_rate_hz"))
    return SessionInfo(
        "realtime",
        created,
        session_id=sid if isinstance(sid, str) else None,
        resume_token=token if isinstance(token, str) and token else None,
        capabilities=dict(caps) if isinstance(caps, dict) else None,
        output_rate=rate or REALTIME_RATE,
        input_format=declared_float_input(session),
        url=url,
    )


def _is(kind: str) -> Callable[[Event], bool]:
    return lambda event: event.type in (kind, "error")


async def _connect(http: aiohttp.ClientSession, url: str, within: float) -> ProbeConnection:
    try:
        ws = await asyncio.wait_for(
            http.ws_connect(
                url,
                max_msg_size=0,
                autoping=True,
                compress=0,
                timeout=aiohttp.ClientWSTimeout(ws_close=2.0),
            ),
            within,
        )
    except (aiohttp.ClientError, OSError, TimeoutError) as exc:
        raise OpenFailed(f"cannot connect to {url}: {exc or 'timed out'}") from None
    return ProbeConnection(ws, url)


async def _refused(conn: ProbeConnection) -> dict[str, Any] | None:
    """``error`` code ``unsupported`` (+ close 1008) right after the upgrade, if that is it."""
    first = await conn.wait_for(lambda e: True, SERVER_FIRST_WAIT_S)
    if first is None:
        if conn.closed.is_set() and conn.close_code == 1008:
            return {"code": None, "message": "", "close_code": 1008}
        return None
    if first.type != "error" or error_code(first.data) != "unsupported":
        return None
    await conn.wait_until(conn.closed.is_set, 1.0)
    return {
        "code": "unsupported",
        "message": error_message(first.data),
        "close_code": conn.close_code,
    }


#: Opening errors after which the probe tries again without declaring server_vad.
_TURN_DETECTION_REFUSED = frozenset({"invalid_session_config", "unsupported_turn_detection"})


async def open_session(
    http: aiohttp.ClientSession,
    target: Target,
    *,
    turn_detection: bool = True,
    record: bool = True,
) -> ProbeConnection:
    """A connection with its session open (``conn.info`` set); raises OpenFailed."""
    try:
        return await _open_session(http, target, turn_detection, record)
    except OpenFailed as exc:
        if not turn_detection or exc.code not in _TURN_DETECTION_REFUSED:
            raise
    conn = await _open_session(http, target, False, record)
    assert conn.info is not None
    conn.info.notes.append("the endpoint refused turn_detection server_vad; opened without it")
    return conn


async def _open_session(
    http: aiohttp.ClientSession, target: Target, turn_detection: bool, record: bool
) -> ProbeConnection:
    query = {"model": target.model} if target.model else {}
    refusal: dict[str, Any] | None = None
    for duplex in (True, False):
        url = with_query(target.url, {"duplex": "1", **query} if duplex else query)
        conn = await _connect(http, url, target.open_timeout_s)
        if duplex:
            refusal = await _refused(conn)
            if refusal is not None:
                await conn.close(say_goodbye=False)
                continue
        try:
            info = await _open(conn, target, turn_detection, listened=duplex)
        except BaseException:
            await conn.close(say_goodbye=False)
            raise
        info.duplex_refused = refusal
        if duplex and info.dialect == "turn":
            info.notes.append("?duplex=1 was not refused but served the turn-based dialect")
        conn.adopt(info)
        conn.record = record
        return conn
    raise OpenFailed("the endpoint refused both ?duplex=1 and the plain URL")


async def _open(
    conn: ProbeConnection, target: Target, turn_detection: bool, *, listened: bool
) -> SessionInfo:
    """``listened``: the server already had its chance to speak first."""
    created = await conn.wait_for(_is("session.created"), 0.0 if listened else SERVER_FIRST_WAIT_S)
    spoke_first = created is None
    if spoke_first:
        update = {
            "type": "session.update",
            "session": realtime_session(target.model, turn_detection),
        }
        await conn.send(update)
        created = await conn.wait_for(_is("session.created"), target.open_timeout_s)
    if created is None:
        raise OpenFailed(
            "no session.created"
            + (f" (closed {conn.close_code})" if conn.closed.is_set() else " within the timeout"),
            close_code=conn.close_code,
        )
    if created.type == "error":
        # A refusal is usually followed by a close: its code belongs to the answer.
        await conn.wait_until(conn.closed.is_set, 1.0)
        raise OpenFailed(
            f"session refused: {error_code(created.data)}: {error_message(created.data)}",
            code=error_code(created.data),
            close_code=conn.close_code,
        )
    info = session_info(created.data, conn.url)
    if info.dialect == "turn":
        await conn.send({"type": "session.update", "model": target.model})
        return info
    index = conn.events.index(created)
    if spoke_first:
        info.input_format = None  # the session took the probe's own PCM16
    else:
        # A float input the session opened with is the model's: keep it, speak it.
        session = realtime_session(target.model, turn_detection, info.input_format)
        await conn.send({"type": "session.update", "session": session})
    answer = await conn.wait_for(_is("session.updated"), 2.0, since=index + 1)
    if answer is not None and answer.type == "error":
        info.update_error = {
            "code": error_code(answer.data),
            "message": error_message(answer.data),
        }
    return info


async def resume_session(
    http: aiohttp.ClientSession, request: ResumeRequest, timeout_s: float = 5.0
) -> tuple[ProbeConnection, Event | None]:
    """A new connection whose first event is ``session.resume``; returns the answer event.

    The answer is ``session.resumed`` on success, else the ``error`` /
    ``session.resync_required`` the endpoint sent (or None: nothing, or it closed).
    """
    url = with_query(request.url, {"autostart": "0"})
    conn = await _connect(http, url, timeout_s)
    await conn.send(
        {
            "type": "session.resume",
            "session_id": request.session_id,
            "resume_token": request.resume_token,
            "last_received_server_event_seq": request.last_seq,
        }
    )
    kinds = ("session.resumed", "session.resync_required", "error", "session.created")
    answer = await conn.wait_for(lambda e: e.type in kinds, timeout_s)
    # Its session is this connection's now: ending it must close it, or the endpoint
    # holds it (and its slot) through a disconnect grace.
    conn.resumed = answer is not None and answer.type == "session.resumed"
    return conn, answer
