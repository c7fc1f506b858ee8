"""The barge-in relay's client settings for a fresh upstream session: every update the
upstream took, folded into one.

vLLM-Omni applies a ``session.update`` over the session it has, field by field
(``engine/duplex/config.py``, ``apply_realtime_update``; the formats and rates in
``protocol/realtime/session.py``, ``apply_realtime_session_defaults``): a field an
update leaves out keeps its value, one it names (``null`` included) replaces it,
``extra_body`` is merged into, and the detector runs on through an update that names
no turn detection (``engine/duplex/session/control.py``, ``on_session_update``). So
the update a fresh upstream session gets after a loss, or after a move to another
replica (``shim/snapshot.py``, ``opening_session``), is every earlier one with each
later one over it (``folded``), not the last alone. A fact spelled several ways (the
turn detection flat or under ``audio.input``, a rate flat, nested or in its format
object, the voice flat or under ``audio.output``, ``max_output_tokens``, an
``overlap_policy`` flat or in ``extra_body``: ``relay_kept_settings.py``) is replaced
whole by an update that names it in any of them, and stated once where vLLM-Omni
reads it; a value vLLM-Omni ignores (``extra_body: null``, ``audio: null``, a
``temperature: null``) leaves the earlier one standing. So the folded update reads
as the updates did, one after the other.
"""

from __future__ import annotations

import copy
from typing import Any

import orjson

from shim.actions import Action, SendUpstream
from shim.dialects.relay_kept_settings import (
    SETTINGS,
    TURN,
    Path,
    drop,
    get,
    names,
    put,
    stated_where_read,
)

# The spellings of one fact (the settings read one spelling at a time:
# ``relay_kept_settings.py``).
_IN_FORMAT: tuple[Path, ...] = (("input_audio_format",), ("audio", "input", "format"))
_IN_RATE: tuple[Path, ...] = (
    ("sample_rate_hz",),
    ("sample_rate",),
    ("audio", "input", "sample_rate_hz"),
    ("audio", "input", "sample_rate"),
)
_OUT_FORMAT: tuple[Path, ...] = (
    ("output_audio_format",),
    ("response_format",),
    ("audio", "output", "format"),
)
_OUT_RATE: tuple[Path, ...] = (
    ("audio", "output", "sample_rate_hz"),
    ("audio", "output", "sample_rate"),
)
# Objects an update adds to rather than replaces (two levels under ``audio``); one
# that is not an object changes nothing of the session (``apply_realtime_update``).
_MERGED = ("audio", "extra_body")
# Open-only fields: given when a session opens, refused on a live one.
_OPEN_ONLY = ("ref_audio", "model")
# Fields only an opening reads (``initial_user_text`` an unanswered user item at open):
# a live update leaves them unread (``apply_realtime_update``), so they are not folded.
_OPENING_ONLY = ("initial_user_text", "idle_timeout_s")
# ``extra_body`` keys a live update leaves there unread, which an opening reads into
# the session (``DuplexSessionConfig.from_event``, last): a fresh upstream opened with
# the fold after a move would run them (stated flat, they are read live and kept).
# The playback commit policy as the fold states it (one spelling of the two), and the
# one vLLM-Omni starts every session with.
POLICY_SPELLINGS: tuple[Path, ...] = (
    ("playback_commit_policy",),
    ("extra_body", "playback_commit_policy"),
)
ACK_ONLY = "ack_only"
_READ_AT_OPEN = ("overlap_short_ack_ms", "overlap_barge_in_ms", "overlap_silence_rms")


def _session(ev: dict[str, Any]) -> dict[str, Any]:
    nested = ev.get("session")
    if isinstance(nested, dict):
        return nested
    return {k: v for k, v in ev.items() if k not in ("type", "event_id")}


def _first(session: dict[str, Any], group: tuple[Path, ...]) -> Any:
    """The value of the spelling vLLM-Omni reads first (a set one), or None."""
    return next((v for v in (get(session, path)[1] for path in group) if v), None)


def _read(session: dict[str, Any], formats: tuple[Path, ...], rates: tuple[Path, ...]) -> Any:
    """One side's (format, rate) as vLLM-Omni reads them: an input rate flat, nested,
    then in its format object; an output rate in its format object, else beside a
    nested format (``apply_realtime_session_defaults``)."""
    spec = _first(session, formats)
    own = spec.get("rate") if isinstance(spec, dict) else None
    if formats is _IN_FORMAT:
        return spec, _first(session, rates) or own
    flat = _first(session, formats[:2])
    return spec, own or (None if flat else _first(session, rates))


def _side(
    out: dict[str, Any], new: dict[str, Any], formats: tuple[Path, ...], rates: tuple[Path, ...]
) -> None:
    """One side's format and rate, ``new``'s over ``out``'s, stated once in ``out``
    where vLLM-Omni reads them (an output rate only beside a nested format): a rate
    stays when a later update names only a format."""
    if not names(new, formats) and not names(new, rates):
        return
    spec, rate = _read(out, formats, rates)
    new_spec, new_rate = _read(new, formats, rates)
    spec, rate = new_spec or spec, new_rate or rate
    drop(out, (*formats, *rates))
    drop(new, (*formats, *rates))
    if isinstance(spec, dict) and rate:
        spec = {**spec, "rate": rate}
    flat = formats is _IN_FORMAT  # flat, as an update the GA relay states (ga_upstream.py)
    if spec:
        put(out, formats[0] if flat else formats[-1], spec)
    if rate:
        put(out, rates[0], rate)


def folded(sent: dict[str, Any], kept: dict[str, Any] | None) -> dict[str, Any]:
    """``sent`` (a ``session.update`` as the upstream got it) over ``kept``, the
    updates before it folded into one: the session a fresh upstream is to have."""
    new = copy.deepcopy(_session(sent))  # the first, too, stated as vLLM-Omni reads it
    out = {} if kept is None else copy.deepcopy(_session(kept))
    _objects_only(new, empty=False)
    for key in _OPENING_ONLY:
        new.pop(key, None)
    extra = new.get("extra_body")
    if isinstance(extra, dict):
        for key in _READ_AT_OPEN:
            extra.pop(key, None)
    if names(new, TURN):
        drop(out, TURN)
    _side(out, new, _IN_FORMAT, _IN_RATE)
    _side(out, new, _OUT_FORMAT, _OUT_RATE)
    for paths, read in SETTINGS:
        took = read(new)
        if took is None:  # named, if at all, to no effect: the earlier value stands
            drop(new, paths)
        else:  # the value read replaces every spelling, and is stated once
            drop(out, paths)
            drop(new, tuple(path for path in paths if path != took))
    _objects_only(new, empty=True)
    for key, value in new.items():
        old = out.get(key)
        if key in _MERGED and isinstance(old, dict):
            if key == "audio":
                for side, part in value.items():
                    was = old.get(side)
                    old[side] = {**was, **part} if isinstance(was, dict) else part
            else:
                old.update(value)
        else:
            out[key] = value
    stated_where_read(out)
    return {"type": "session.update", "session": out}


def _objects_only(session: dict[str, Any], *, empty: bool) -> None:
    """Leave out merged objects given as anything else (vLLM-Omni reads nothing of an
    ``audio: null`` but its echo of ``audio``), and, if ``empty``, empty ones."""
    audio = session.get("audio")
    if isinstance(audio, dict):
        for side in [k for k in ("input", "output") if k in audio]:
            if not isinstance(audio[side], dict) or (empty and not audio[side]):
                del audio[side]
    for key in _MERGED:
        if key in session and (not isinstance(session[key], dict) or (empty and not session[key])):
            del session[key]


def not_opened(kept: dict[str, Any] | None) -> list[Action]:
    """What a fresh upstream opened with the folded update (after a move) is given after
    its opening: the playback commit policy, which vLLM-Omni sets to ``ack_only`` as the
    session starts, whatever its opening said (``engine/duplex/session/runner.py``,
    ``start``). Everything else the fold states an opening reads as an update would."""
    session = {} if kept is None else _session(kept)
    for path in POLICY_SPELLINGS:
        found, value = get(session, path)
        if found and isinstance(value, str) and value != ACK_ONLY:
            update = {"playback_commit_policy": value}
            return [SendUpstream({"type": "session.update", "session": update})]
    return []


class KeptSettings:
    """The barge-in relay's record of the client's settings (a mixin of
    ``duplex_relay.py``): ``last_update``, set to each update the upstream takes, is
    that update as sent; ``kept_update()`` is all of them folded into one."""

    _last: dict[str, Any] | None = None
    _folded: dict[str, Any] | None = None
    # The last fold ``kept_update`` made: what ``_last`` was then (as JSON: 1, 1.0 and
    # true differ there), the ``_folded`` it went over, and the result.
    _kept: tuple[bytes, dict[str, Any] | None, dict[str, Any]] | None = None

    @property
    def last_update(self) -> dict[str, Any] | None:
        return self._last

    @last_update.setter
    def last_update(self, sent: dict[str, Any] | None) -> None:
        self._last = sent
        self._folded = None if sent is None else folded(sent, self._folded)

    def opened_with(self, session: dict[str, Any]) -> None:
        """Start the fold from the session the upstream opened with for this client
        (its opening over the route's defaults: ``proxy/upstream_opening.py``), its
        overlap numbers as the opening read them (``extra_body``'s, read last, over the
        flat ones), stated flat as a live update reads them."""
        opening = copy.deepcopy(session)
        extra = opening.get("extra_body")
        if isinstance(extra, dict):
            for key in _READ_AT_OPEN:
                if isinstance(extra.get(key), int | float) and not isinstance(extra[key], bool):
                    opening[key] = extra.pop(key)
        self._last = self._folded = None
        self.last_update = {"type": "session.update", "session": opening}

    def kept_update(self) -> dict[str, Any] | None:
        """Every update folded into one, the last as it stands now (the GA relay states
        a fresh upstream's input in it: ``relay_upstream_audio.py``); folding the same
        update again changes nothing else. Folded again only when either has changed
        (``_last`` may change in place: ``relay_upstream_audio.py``): every checkpoint
        reads it, and a fold is most of a relay's snapshot."""
        if self._last is None:
            return None
        try:
            key = orjson.dumps(self._last)
        except TypeError:  # not JSON: folded each time
            return folded(self._last, self._folded)
        kept = self._kept
        if kept is None or kept[0] != key or kept[1] is not self._folded:
            kept = self._kept = (key, self._folded, folded(self._last, self._folded))
        return copy.deepcopy(kept[2])  # the caller's own: the cached one stays as made


def opening(kept: dict[str, Any] | None) -> dict[str, Any] | None:
    """The session a fresh upstream opens with after a loss: the client's settings, as
    after a move (``shim/snapshot.py``, ``opening_session``). The update ``given`` after
    it then changes nothing a model fixes at its open: MiniCPM-o and Nemotron refuse
    any live change of the instructions they opened with, and the whole update with it."""
    if kept is None:
        return None
    session = copy.deepcopy(_session(kept))
    for key in ("type", "event_id", *_OPEN_ONLY):
        session.pop(key, None)
    return session


def given(kept: dict[str, Any] | None) -> list[Action]:
    """What a fresh upstream session is given of the client's settings: the folded
    update less the open-only fields, which it was given when it opened."""
    if kept is None:
        return []
    restore = copy.deepcopy(kept)
    for key in _OPEN_ONLY:
        _session(restore).pop(key, None)
    return [SendUpstream(restore)]
