"""The session snapshot: what another replica needs to carry an emulated session on.

Typed and versioned. The store keeps ``SessionSnapshot.to_wire()`` (a JSON-able
dict); ``from_wire`` reads it back and refuses a version it does not know with
``SnapshotVersionError``. A dict without ``version`` was written before the field
existed: it has version 1's layout. The edge reads snapshots only through the
module-level functions at the end (``upstream_position``, ``upstream_binding``,
``opening_session``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from shim.audio_formats import wire_format

SNAPSHOT_VERSION = 1


class SnapshotError(ValueError):
    """A stored snapshot this code cannot read."""


class SnapshotVersionError(SnapshotError):
    def __init__(self, version: object) -> None:
        super().__init__(
            f"session snapshot version {version!r} is not supported "
            f"(this proxy reads version {SNAPSHOT_VERSION})"
        )
        self.version = version


@dataclass(frozen=True, slots=True)
class ResponseState:
    """A response as a snapshot keeps it: ids, audio sent, transcript sent."""

    response_id: str
    item_id: str
    sent_ms: int = 0
    transcript: str = ""

    def to_wire(self) -> dict[str, Any]:
        return {
            "response_id": self.response_id,
            "item_id": self.item_id,
            "sent_ms": self.sent_ms,
            "transcript": self.transcript,
        }

    @staticmethod
    def from_wire(raw: Any) -> ResponseState | None:
        if not raw:
            return None
        if not isinstance(raw, dict):
            raise SnapshotError("a snapshot's response must be an object")
        return ResponseState(
            str(raw["response_id"]),
            str(raw["item_id"]),
            int(raw.get("sent_ms") or 0),
            str(raw.get("transcript") or ""),
        )


@dataclass(frozen=True, slots=True)
class UpstreamState:
    """The upstream's own session: id, resume token (None: not resumable), seq handled."""

    id: str
    token: str | None
    seq: int

    def to_wire(self) -> dict[str, Any]:
        return {"id": self.id, "token": self.token, "seq": self.seq}


@dataclass(frozen=True, slots=True)
class PlaybackReports:
    """Who tells the upstream what was played (see ``shim/dialects/relay_reports.py``)."""

    client_acks: bool = False
    proxy_acked: bool = False
    upstream_audio_ms: float = 0.0
    end_reported: bool = False
    # A response generated in full whose playback end is still to report.
    playing: ResponseState | None = None
    in_flight: tuple[list[Any], ...] = ()  # acks, truncates unanswered (relay_reports.py)

    def to_wire(self) -> dict[str, Any]:
        return {
            "client_acks": self.client_acks,
            "proxy_acked": self.proxy_acked,
            "upstream_audio_ms": self.upstream_audio_ms,
            "end_reported": self.end_reported,
            "playing": self.playing.to_wire() if self.playing else None,
            "in_flight": list(self.in_flight),
        }


@dataclass(frozen=True, slots=True)
class RelayState:
    """What only ``barge_in_emulated`` keeps."""

    upstream_update: dict[str, Any] | None = None  # the client's updates, folded, as sent up
    upstream: UpstreamState | None = None
    cancelled: tuple[str, ...] = ()
    history: tuple[tuple[str, str, str], ...] = ()  # (item id, role, text), oldest first
    restoring: tuple[str, ...] = ()
    suppress_upstream_speech: bool = False
    playback_reports: PlaybackReports = PlaybackReports()
    own_updates: tuple[list[Any], ...] = ()  # [event id, update] unanswered (relay_own_updates)
    resampler: dict[str, Any] | None = None  # the open response's (shim/resampler_carry.py)

    def to_wire(self) -> dict[str, Any]:
        return {
            "upstream_update": self.upstream_update,
            "upstream": self.upstream.to_wire() if self.upstream else None,
            "cancelled": list(self.cancelled),
            "history": [list(h) for h in self.history],
            "restoring": list(self.restoring),
            "suppress_upstream_speech": self.suppress_upstream_speech,
            "playback_reports": self.playback_reports.to_wire(),
            "own_updates": list(self.own_updates),
            "resampler": self.resampler,
        }


@dataclass(frozen=True, slots=True)
class SessionSnapshot:
    counter: int
    last_item_id: str | None
    input_format: tuple[str, int]  # (encoding, rate)
    output_format: tuple[str, int]
    turn_detection: dict[str, Any] | None
    instructions: str | None
    open_response: ResponseState | None
    relay: RelayState | None = None
    version: int = SNAPSHOT_VERSION

    def to_wire(self) -> dict[str, Any]:
        """The JSON-able dict the session store keeps (version 1's flat layout)."""
        out: dict[str, Any] = {
            "version": self.version,
            "counter": self.counter,
            "last_item_id": self.last_item_id,
            "input_format": list(self.input_format),
            "output_format": list(self.output_format),
            "turn_detection": self.turn_detection,
            "instructions": self.instructions,
            "open_response": self.open_response.to_wire() if self.open_response else None,
        }
        if self.relay is not None:
            out.update(self.relay.to_wire())
        return out

    def config_update(self) -> dict[str, Any]:
        """The client's settings as a ``session.update`` to apply on restore."""
        session: dict[str, Any] = {
            "audio": {
                "input": {
                    "format": wire_format(*self.input_format, with_rate=True),
                    "turn_detection": self.turn_detection,
                },
                "output": {"format": wire_format(*self.output_format, with_rate=True)},
            },
        }
        if self.instructions is not None:
            session["instructions"] = self.instructions
        return {"type": "session.update", "session": session}

    @staticmethod
    def from_wire(wire: dict[str, Any]) -> SessionSnapshot:
        version = wire.get("version", 1)
        if version != SNAPSHOT_VERSION:
            raise SnapshotVersionError(version)
        try:
            return SessionSnapshot(
                counter=int(wire.get("counter", 0)),
                last_item_id=_opt_str(wire.get("last_item_id")),
                input_format=_format(wire["input_format"]),
                output_format=_format(wire["output_format"]),
                turn_detection=_opt_dict(wire.get("turn_detection")),
                instructions=_opt_str(wire.get("instructions")),
                open_response=ResponseState.from_wire(wire.get("open_response")),
                relay=_relay(wire) if "upstream" in wire else None,
            )
        except (KeyError, TypeError, ValueError) as exc:
            if isinstance(exc, SnapshotError):
                raise
            raise SnapshotError(f"malformed session snapshot: {exc!r}") from None


def _opt_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _opt_dict(value: Any) -> dict[str, Any] | None:
    return value if isinstance(value, dict) else None


def _format(raw: Any) -> tuple[str, int]:
    encoding, rate = raw
    return str(encoding), int(rate)


def _upstream(raw: Any) -> UpstreamState | None:
    if not isinstance(raw, dict):
        return None
    sid, token, seq = raw.get("id"), raw.get("token"), raw.get("seq")
    if not isinstance(sid, str) or isinstance(seq, bool) or not isinstance(seq, int):
        return None
    return UpstreamState(sid, token if isinstance(token, str) else None, seq)


def _relay(wire: dict[str, Any]) -> RelayState:
    reports = wire.get("playback_reports") or {}
    return RelayState(
        upstream_update=_opt_dict(wire.get("upstream_update")),
        upstream=_upstream(wire.get("upstream")),
        cancelled=tuple(str(rid) for rid in wire.get("cancelled") or ()),
        history=tuple((str(i), str(r), str(t)) for i, r, t in wire.get("history") or ()),
        restoring=tuple(str(iid) for iid in wire.get("restoring") or ()),
        suppress_upstream_speech=wire.get("suppress_upstream_speech") is True,
        playback_reports=PlaybackReports(
            client_acks=reports.get("client_acks") is True,
            proxy_acked=reports.get("proxy_acked") is True,
            upstream_audio_ms=float(reports.get("upstream_audio_ms") or 0.0),
            end_reported=reports.get("end_reported") is True,
            playing=ResponseState.from_wire(reports.get("playing")),
            in_flight=tuple(x for x in reports.get("in_flight") or () if isinstance(x, list)),
        ),
        own_updates=tuple(x for x in wire.get("own_updates") or () if isinstance(x, list)),
        resampler=_opt_dict(wire.get("resampler")),
    )


def upstream_position(wire: dict[str, Any]) -> tuple[str, int] | None:
    """(upstream session id, seq) a stored snapshot was taken at, if it has one."""
    up = _upstream(wire.get("upstream"))
    return (up.id, up.seq) if up is not None else None


def upstream_binding(wire: dict[str, Any]) -> tuple[str, str, int] | None:
    """(id, resume token, seq) of the upstream session a stored snapshot can resume."""
    up = _upstream(wire.get("upstream"))
    if up is None or not up.id or up.token is None:
        return None
    return up.id, up.token, up.seq


def opening_session(wire: dict[str, Any]) -> dict[str, Any] | None:
    """The ``session`` a fresh upstream session opens with after a move: the client's
    updates as sent upstream, folded (``relay_kept_update.py``), else the instructions."""
    sent = wire.get("upstream_update")
    if isinstance(sent, dict):
        nested = sent.get("session")
        session = dict(nested if isinstance(nested, dict) else sent)
        for key in ("type", "event_id"):
            session.pop(key, None)
        return session
    instructions = wire.get("instructions")
    if instructions:
        return {"instructions": instructions}
    return None


def with_upstream_token(wire: dict[str, Any], token: str | None) -> dict[str, Any]:
    """The snapshot with its upstream session's resume token replaced (None: not
    resumable), e.g. sealed for the store, or opened again from it."""
    up = wire.get("upstream")
    if not isinstance(up, dict) or up.get("token") == token:
        return wire
    return {**wire, "upstream": {**up, "token": token}}


def upstream_token(wire: dict[str, Any]) -> str | None:
    up = _upstream(wire.get("upstream"))
    return up.token if up is not None else None
