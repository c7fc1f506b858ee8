"""The stand-in for a model-native duplex model: the listening half (see ``duplex_speaking``).

What the real runner does, reduced to what reaches the wire:

* it hears every append.  Under server VAD (or always, when lenient) its own
  detector (``speech_detector``) opens a user turn
  (``input_audio_buffer.speech_started``) and ends it after ``silence_ms`` of
  silence; without server VAD a strict backend only marks the first append of
  a buffer with ``speech_started`` and waits for ``input_audio_buffer.commit``
  (``realtime_events.py::note_input_append``, ``session/control.py``);
* a commit is answered only when the client asks (``response_create``) or the
  session has ``extra_body.auto_response`` (``session/emitter.py``); lenient
  backends answer every commit that does not say ``response_create: false``;
* speech while the assistant owns the turn is an *overlap*: barge-in (epoch
  + 1, ``response.done`` cancelled ``turn_detected``) when the model can and
  the session's ``overlap_policy`` is ``barge_in_on_speech`` (server VAD);
  otherwise it is heard and buffered as the next turn, answered once the
  assistant lets go (``session/overlap_policy.py``).  A commit in that time is
  only acknowledged (``session/runner.py::_on_commit``).
"""

from __future__ import annotations

import numpy as np

from proxy.reference.conversation import UserCommit, emit_user_commit
from proxy.reference.duplex_input import DecodedAppend, InputTape
from proxy.reference.duplex_port import (
    SessionPort,
    UserTurn,
    emit_overlap_decision,
    new_item_id,
    rms,
)
from proxy.reference.duplex_speaking import Speaking
from proxy.reference.options import FAULT_DEAF_WHILE_SPEAKING
from proxy.reference.speech_detector import START, SpeechDetector

_PREFIX_MS = 300
BARGE_IN_ON_SPEECH = "barge_in_on_speech"


class DuplexModel(Speaking):
    def __init__(self, port: SessionPort) -> None:
        super().__init__(port)
        opts = port.options
        self._can_barge_in = opts.barge_in_for(port.kind)
        self._vad_only = opts.strict("vad_only_turns")
        self._opt_in_barge_in = opts.strict("opt_in_barge_in")
        self._commit_needs_request = opts.strict("commit_needs_request")
        self.detector = self._new_detector()
        self.tape = InputTape()
        self._clock_ms = 0  # the tape's time at the detector's zero
        # the user turn being heard (its start in tape time)
        self._item_id: str | None = None
        self._utterance_ms: int | None = None
        self._in_overlap, self._overlap_ms = False, 0
        self._appended = self._append_speech = False
        self._reset_ms = 0  # the tape's time at vLLM-Omni's last VAD reset (a commit)

    def _new_detector(self) -> SpeechDetector:
        opts = self._opts
        return SpeechDetector(
            band_rms=opts.speech_band_rms,
            snr=opts.speech_snr,
            max_flatness=opts.speech_max_flatness,
            min_speech_ms=opts.min_speech_ms,
            silence_ms=opts.silence_ms,
        )

    def replace_detector(self) -> None:
        """An update naming ``turn_detection``: a fresh detector, at once.

        ``session/control.py`` (``on_session_update``) adopts the new one
        (``PendingTurnDetectionUpdate.commit``): the speech being heard never
        stops and the VAD clock starts again at zero, while the buffer, and an
        open ``speech_started``, stay (``realtime_events.py``).
        """
        self.detector = self._new_detector()
        self._clock_ms = self._reset_ms = self.tape.end_ms

    def _detects_turns(self) -> bool:
        return not self._vad_only or self.port.server_vad

    def _barge_in(self) -> bool:
        """Whether overlapping speech cuts the assistant in this session now."""
        if not self._can_barge_in:
            return False
        return not self._opt_in_barge_in or self.port.overlap_policy == BARGE_IN_ON_SPEECH

    # ---- input ----

    def on_append(self, decoded: DecodedAppend) -> None:
        if self._opts.has(FAULT_DEAF_WHILE_SPEAKING) and self.owns_turn():
            return
        samples = decoded.samples
        if samples.size == 0:
            return
        speechy = rms(samples) >= self._opts.append_speech_rms
        if not self._detects_turns():
            self._append_without_vad(decoded, speechy)
            return
        self._appended = True
        self._append_speech = self._append_speech or speechy
        self.tape.append(samples)
        self._chunk_taken()
        if self._in_overlap and not self.owns_turn():
            self._in_overlap = False
            self._open_input()
        update = self.detector.feed(samples)
        for kind, ms in update.events:
            if kind == START:
                self._speech_start(ms)
            else:
                self._speech_stop(ms)
        if self._in_overlap and self.detector.active and update.speech_ms:
            self._overlap(update.speech_ms, int(decoded.duration_ms))

    def _append_without_vad(self, decoded: DecodedAppend, speechy: bool) -> None:
        """No turn detection: buffer, mark the buffer's start, decide overlap per append."""
        duration_ms = int(decoded.duration_ms)
        if self.owns_turn():
            if not speechy:
                self._decide("drop", "silence_or_noise", duration_ms)
                return
            self._overlap_ms += duration_ms
            self._decide("listen", "policy_listen_only", duration_ms)
        self._appended = True
        self._append_speech = self._append_speech or speechy
        self.tape.append(decoded.samples)
        self._chunk_taken()
        if decoded.is_speech is not False:
            self._open_input()

    def _chunk_taken(self) -> None:
        """An auto-responding session hands its model each whole chunk as it fills
        (``session/runner.py``, ``_on_append_audio``: ``allow_emit``), which locks it;
        otherwise appends only fill the buffer until a turn is taken."""
        if self.port.auto_response and self.tape.held_ms >= self._opts.chunk_ms_for(self.port.kind):
            self.context_locked = self.context_locked or self.locks_context

    def _open_input(self) -> None:
        if self._item_id is not None:
            return
        self._item_id = new_item_id()
        # The onset less the prefix padding, not before the last reset (``vad.py``).
        onset, padding = self._utterance_ms, self.port.settings.prefix_padding_ms
        start = 0 if onset is None else max(self._reset_ms, onset - padding) - self._clock_ms
        self.port.emit(
            "input_audio_buffer.speech_started", {"audio_start_ms": start, "item_id": self._item_id}
        )
        if self.response is None:
            self.turn_state = "user_speaking"

    def _speech_start(self, ms: int) -> None:
        if self._item_id is None or self._utterance_ms is None:
            self._utterance_ms = ms + self._clock_ms
        if self.owns_turn():
            self._in_overlap = True
            self._overlap_ms = 0
            if not self._barge_in():
                self._open_input()  # heard and buffered as the next turn
            return
        self._open_input()

    def _overlap(self, speech_ms: int, duration_ms: int) -> None:
        self._overlap_ms += speech_ms
        if not self._barge_in():
            unsupported = not self._can_barge_in or not self._opt_in_barge_in
            reason = "barge_in_unsupported" if unsupported else "policy_listen_only"
            self._decide("listen", reason, duration_ms)
            return
        if self._overlap_ms < self._opts.barge_in_overlap_ms:
            self._decide("listen", "accumulating_overlap_speech", duration_ms)
            return
        self._decide(
            "barge_in", "server_vad_speech_started", duration_ms, cancel_reason="turn_detected"
        )
        self._in_overlap = False
        self.stop_assistant("turn_detected")
        self._open_input()

    def _decide(self, action: str, reason: str, duration_ms: int, cancel_reason: str = "") -> None:
        emit_overlap_decision(
            self.port,
            self.epoch,
            action,
            reason,
            duration_ms=duration_ms,
            overlap_ms=self._overlap_ms,
            cancel_reason=cancel_reason,
        )

    def _speech_stop(self, stop_ms: int) -> None:
        if self._in_overlap:
            self._in_overlap = False
            if self.owns_turn():
                if self._barge_in():
                    self.reset_input()  # a backchannel too short to cut in: dropped
                    return
                self.hold(self._commit(stop_ms, deferred=True), answer=True)
                return
            self._open_input()
        turn = self._commit(stop_ms)
        if self._vad_only and not self.port.vad_create_response:
            self.hold(turn, answer=False)  # server_vad with create_response false: commit only
            return
        self.respond(turn)

    def reset_input(self) -> None:
        self._item_id = self._utterance_ms = None
        self._in_overlap, self._overlap_ms = False, 0
        self._appended = self._append_speech = False
        self.detector.reset()
        self.tape.clear()

    def _commit(
        self, stop_ms: int | None, *, deferred: bool = False, is_speech: bool = True
    ) -> UserTurn:
        """Commit the heard input as a user item (speech_stopped, item, committed, done)."""
        item_id = self._item_id or new_item_id()
        if self._item_id is not None:
            self.port.emit(
                "input_audio_buffer.speech_stopped",
                {"audio_end_ms": stop_ms or 0, "item_id": item_id},
            )
        end = stop_ms + self._clock_ms if stop_ms is not None else self.tape.end_ms
        start = 0 if self._utterance_ms is None else max(0, self._utterance_ms - _PREFIX_MS)
        audio = self.tape.slice(start, end) if is_speech else np.zeros(0, dtype=np.int16)
        speech_ms = audio.size // 16
        transcript = f"({speech_ms / 1000:.1f} s of speech)" if is_speech else ""
        self.turn_id += 1
        emit_user_commit(
            self.port.emit,
            self.conversation,
            UserCommit(
                session_id=self.port.id,
                item_id=item_id,
                transcript=transcript,
                is_speech=is_speech,
                turn_id=self.turn_id,
                epoch=self.epoch,
                deferred=deferred,
            ),
        )
        if not deferred:
            for response in self.responses.values():
                response.superseded = response.superseded or response.done
        self._reset_ms = self.tape.end_ms  # only a commit resets vLLM-Omni's VAD (its floor)
        self.reset_input()
        if self.response is None:
            self.turn_state = "user_committed"
        return UserTurn(item_id=item_id, audio=audio, speech_ms=speech_ms)

    def on_commit(self, create_response: bool | None, event_id: object) -> None:
        if not self._appended and self._item_id is None:
            self.port.emit_error(
                "input_audio_buffer_empty",
                "input_audio_buffer.commit requires a non-empty input audio buffer",
                event_id=event_id,
            )
            return
        if not (self._append_speech or self._item_id is not None):
            self._commit(None, is_speech=False)
            return
        if self._commit_needs_request:
            # realtime_events.py sends an absent response_create as false; auto_response
            # sessions answer a spoken commit anyway (session/commit_policy.py).
            create_response = create_response is True or self.port.auto_response
        if self._ack_owned and self.owns_turn():
            self._commit_while_owned(create_response is not False)
            return
        deferred = self.owns_turn()
        turn = self._commit(None, deferred=deferred)  # speech_stopped says audio_end_ms 0
        if create_response is False:
            self.hold(turn, answer=False)  # waits for response.create, with what waits already
            return
        self.respond(turn)

    def _commit_while_owned(self, create: bool) -> None:
        """A commit while the assistant owns the turn is only acknowledged.

        ``session/runner.py::_on_commit``: overlap speech up to
        ``overlap_short_ack_ms`` is discarded as an interjection; a longer one
        is kept and answered once the assistant lets go (its playback acked).
        """
        overlap_ms = self._overlap_ms
        if 0 < overlap_ms <= self.port.overlap_short_ack_ms:
            self._commit(None, deferred=True, is_speech=False)
            return
        turn = self._commit(None, deferred=True)
        # One deferred turn with the audio waiting, answered as its last commit asks
        # (``deferred_response_create``).
        self.hold(turn, answer=create and overlap_ms > 0)

    def on_clear_input(self) -> None:
        self.reset_input()
        self.port.emit("input_audio_buffer.cleared", {})
