"""Actions the shim asks the I/O edge to perform (sans-I/O outputs).

The core never touches a socket: it returns these, in order, and the edge in
``proxy/`` executes them. Each is a frozen slotted dataclass (the h11 style).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class SendClient:
    """Send a server event to the client; the edge stamps ``server_event_seq``."""

    event: dict[str, Any]


@dataclass(frozen=True, slots=True)
class SendClientAudio:
    """An assistant audio delta for the client, with what the ledger and echo need."""

    event: dict[str, Any]
    n_samples: int  # at ``rate_hz``, the client's output rate
    rate_hz: int
    far16: Any = None  # the same audio at 16 kHz (numpy int16), for echo suppression


@dataclass(frozen=True, slots=True)
class SendUpstream:
    """Send a client event to the upstream, already in the upstream's dialect."""

    event: dict[str, Any]
    # An append's audio on the client's input timeline (input samples, ``[start,
    # end)``), recorded when it really goes (``shim/upstream_timeline.py``).
    span: tuple[int, int] | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class ForwardUpstream:
    """Relay the client's original frame text to the upstream unchanged."""

    raw: str


@dataclass(frozen=True, slots=True)
class AbortUpstream:
    """Close the upstream socket (the turn-based dialect's only abort) and redial."""

    reason: str
    redial: bool = True
    # The upstream was lost (not aborted on purpose): the redial replaces it.
    after_loss: bool = False
    # The session a fresh upstream opens with (the client's settings), else the route's.
    opening: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class ResumeUpstream:
    """Reattach the upstream's own session on a new socket (its ``session.resume``).

    The upstream replays its events after ``after_seq``. The edge answers with
    ``UpstreamReattached`` (the ``session.resumed``), or with ``UpstreamLost``
    (``resume=False``) when the upstream cannot resume it.
    """

    session_id: str
    resume_token: str
    after_seq: int


@dataclass(frozen=True, slots=True)
class StandDown:
    """Another connection took the upstream session over (another replica resumed
    this session): let the session go here; it carries on there."""

    reason: str


@dataclass(frozen=True, slots=True)
class AnalyzeAudio:
    """Run VAD on these 16 kHz mono float32 samples (echo already removed).

    ``start_sample`` is the position of the first sample in the session's 16 kHz
    input timeline; the edge feeds probabilities back as ``VadWindow`` inputs.
    """

    samples: Any  # numpy float32 array
    start_sample: int


@dataclass(frozen=True, slots=True)
class CloseClient:
    code: int
    reason: str


@dataclass(frozen=True, slots=True)
class ReportFault:
    """The shim failed on an input (a bug): the edge logs this; the client was already
    told with an ``internal_error`` and the session goes on.

    ``input_kind`` is the input's class (``ClientEvent``, ``UpstreamEvent``, ...),
    ``event_type`` the event's ``type`` when it had one, ``error`` the exception as
    ``repr`` and ``trace`` its formatted traceback.
    """

    input_kind: str
    event_type: str | None
    error: str
    trace: str


@dataclass(frozen=True, slots=True)
class NoteUpstreamError:
    """The upstream refused a command the proxy itself sent (its own ack, cancel or
    truncate): the edge logs and counts it; the client did not err and is not told."""

    code: str | None
    message: str | None


Action = (
    SendClient
    | SendClientAudio
    | SendUpstream
    | ForwardUpstream
    | AbortUpstream
    | ResumeUpstream
    | StandDown
    | AnalyzeAudio
    | CloseClient
    | ReportFault
    | NoteUpstreamError
)
