"""A GA client's ``response.create`` over a duplex upstream, and the metadata it names.

vLLM-Omni 0.30.0 reads a ``response.create``'s options per response
(``engine/duplex/config.py``, ``ResponseCreateOptions.from_realtime``): it refuses
generation overrides itself (``unsupported_native_response_options``), but what a GA
client asks beyond them it would carry out otherwise than GA says, or not at all:

* ``conversation: "none"`` (an out-of-band response) and ``input``: it ignores
  ``input``, and still tells the response's items into the conversation;
* ``output_modalities: ["text"]``: a text-only answer, which the proxy cannot tell
  as GA's text events;
* generation options (``instructions``, ``voice``, ``temperature``, ``tools``, ...):
  vLLM-Omni refuses them in its own code, naming none (``ga_generation_options.py``);
* ``audio.output.format`` other than the session's: the proxy converts every answer
  to the session's output format (a GA name reaches vLLM-Omni as a format it does
  not read, or its own ``response_format``, which the proxy would misread).

So each of these is refused with ``unsupported_by_upstream`` naming it, and no
response is created (``docs/protocol.md``); the session's own format (a name without
a rate is at the session's), ``"auto"`` and modalities with ``"audio"`` among them
(every answer is spoken, its transcript alongside) ask for nothing and are accepted.
``metadata`` is GA's to echo: the proxy keeps it (16 string values at most, as GA)
and tells it as the ``response.metadata`` of the response it asked for, in
``response.created`` and ``response.done``; what vLLM-Omni puts there (its own
event, stringified) is not the client's and is never told.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from shim.actions import Action, SendClient
from shim.audio_formats import SessionConfigError, parse_format
from shim.dialects import ga_generation_options
from shim.session_config import ClientSessionConfig

UNSUPPORTED = "unsupported_by_upstream"
METADATA_KEYS, METADATA_CHARS = 16, 512
KEPT = 32  # responses whose metadata is still to be told in their response.done
# vLLM-Omni's refusals of a response.create (engine/duplex/session/runner.py
# ``_start_response_from_committed_audio``, engine/duplex/config.py
# ``ResponseCreateOptions``), with the GA codes the relay tells two of them as
# (``ga_events.py``).
CREATE_REFUSALS = frozenset(
    {
        "response_already_active",
        "conversation_already_has_active_response",
        "response_create_without_input",
        "text_only_turn_unsupported",
        "unsupported_native_response_options",
    }
)
CREATE = "response.create"


def refuses_create(err: Mapping[str, Any]) -> bool:
    """The upstream error ``err`` refuses a ``response.create``. ``bad_event`` is
    vLLM-Omni's code for any malformed event (an append it cannot decode, a truncate
    or an ack without its numbers): it refuses a create only when its words say so, as
    its refusal of a create's options does ("response.create cannot reserve options
    ...", engine/duplex/session/runner.py ``_on_commit``)."""
    code, message = err.get("code"), err.get("message")
    if code in CREATE_REFUSALS:
        return True
    return code == "bad_event" and isinstance(message, str) and CREATE in message


class Refusal(Exception):
    def __init__(self, code: str, message: str, param: str) -> None:
        super().__init__(message)
        self.code, self.param = code, param


def _metadata(value: Any) -> dict[str, str] | None:
    ok = isinstance(value, dict) and len(value) <= METADATA_KEYS
    if value is None or (
        ok and all(isinstance(v, str) and len(v) <= METADATA_CHARS for v in value.values())
    ):
        return None if value is None else {str(k): v for k, v in value.items()}
    msg = f"metadata must be at most {METADATA_KEYS} string values of {METADATA_CHARS} chars"
    raise Refusal("invalid_value", msg, "response.metadata")


def _refuse(param: str, what: str) -> Refusal:
    return Refusal(
        UNSUPPORTED,
        f"{param}: {what} is not supported over this upstream; no response was created",
        param,
    )


def screened(
    ev: dict[str, Any], cfg: ClientSessionConfig
) -> tuple[dict[str, Any], dict[str, str] | None]:
    """The event as it goes upstream, and the metadata it names; raises ``Refusal``."""
    options = ev.get("response")
    if not isinstance(options, dict):
        if options is not None and not cfg.native:  # vLLM-Omni reads it as no options
            raise Refusal("invalid_value", "response must be an object", "response")
        return ev, None
    option, options = ga_generation_options.screened(dict(options))
    if option is not None:
        raise _refuse(option, "a per-response generation option")
    if options.get("conversation") not in (None, "auto"):
        raise _refuse("response.conversation", "an out-of-band response")
    if options.get("input") is not None:
        raise _refuse("response.input", "a response over its own input items")
    modalities = options.get("output_modalities", options.get("modalities"))
    if modalities is not None and not (
        isinstance(modalities, list)
        and all(isinstance(m, str) for m in modalities)
        and "audio" in modalities
    ):  # spoken, its transcript alongside, as the session's (shim/session_options.py)
        raise _refuse("response.output_modalities", f"output_modalities {modalities!r}")
    audio = options.get("audio")
    output = audio.get("output") if isinstance(audio, dict) else None
    spec = output.get("format") if isinstance(output, dict) else None
    if spec is None:
        spec = options.pop("output_audio_format", None)
    if spec is not None:
        try:
            # A format named without its rate is at the session's rate.
            rate = cfg.output_format.rate_hz
            fmt = parse_format(spec, rate, "response.audio.output.format", allow_f32=False)
        except SessionConfigError as exc:
            raise Refusal(exc.code, str(exc), "response.audio.output.format") from None
        if fmt != cfg.output_format:
            raise _refuse(
                "response.audio.output.format", "an output format other than the session's"
            )
        if isinstance(audio, dict) and isinstance(output, dict):  # the session's: no further
            rest = {k: v for k, v in output.items() if k != "format"}
            outer = {k: v for k, v in audio.items() if k != "output"} | (
                {"output": rest} if rest else {}
            )
            options.pop("audio")
            if outer:
                options["audio"] = outer
    metadata = _metadata(options.pop("metadata", None))
    return {**ev, "response": options}, metadata


class ResponseMetadata:
    """The client's metadata, told as the ``response.metadata`` of its response."""

    __slots__ = ("_asked", "_asked_by", "_told")

    def __init__(self) -> None:
        self._asked: dict[str, str] | None = None  # for the next response.created
        self._asked_by: str | None = None  # the event_id of the create that asked it
        self._told: OrderedDict[str, dict[str, str] | None] = OrderedDict()

    def asked(self, metadata: dict[str, str] | None, event_id: Any = None) -> None:
        self._asked = metadata
        self._asked_by = event_id if isinstance(event_id, str) else None

    def forget(self) -> None:
        """The upstream session is gone: the create waiting is answered by no response."""
        self._asked = self._asked_by = None

    def told_all(self, actions: list[Action]) -> list[Action]:
        return [SendClient(self.told(a.event)) if isinstance(a, SendClient) else a for a in actions]

    def told(self, ev: dict[str, Any], answers_create: bool = True) -> dict[str, Any]:
        """``ev`` with the client's metadata in its response; ``answers_create``: False for
        a response the upstream made of its own (its server VAD's), which asked none."""
        kind, body = ev.get("type"), ev.get("response")
        if kind == "error":
            # vLLM-Omni refuses a create in several ways, most naming no event: an error
            # naming the create, or one of those refusals (whatever event it was
            # named after: ``ga_create_ids.py`` names it), answers it, and its metadata
            # goes with it rather than onto the next response the upstream makes of its
            # own. Other errors (the proxy's own refusal of another event, which a
            # client without event ids gets unnamed) leave it waiting.
            err = ev.get("error")
            err = err if isinstance(err, dict) else {}
            named = err.get("event_id")
            if refuses_create(err) or (named is not None and named == self._asked_by):
                self._asked = None
            return ev
        if kind not in ("response.created", "response.done") or not isinstance(body, dict):
            return ev
        rid = str(body.get("id"))
        if kind == "response.created":
            if answers_create:
                self._told[rid], self._asked = self._asked, None
            else:
                self._told[rid] = None
            while len(self._told) > KEPT:
                self._told.popitem(last=False)
            metadata = self._told[rid]
        else:
            metadata = self._told.pop(rid, None)
        return {**ev, "response": {**body, "metadata": metadata}}
