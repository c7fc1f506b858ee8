"""One ``talk`` conversation: stream the input at real-time pace, play the answer on a
clock, print what happens, and (``--drop-at``) drop the socket and resume the session.

Protocol as in README.md: GA Realtime events, ``server_event_seq`` on every server
event, ``session.resume`` as the first event of a new connection, ``playback.ack``.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import aiohttp
import pybase64

from proxy.talk.audio import FRAME_MS, Speaker, write_wav
from proxy.talk.link import TalkLink
from proxy.talk.options import Source, TalkOptions
from proxy.talk.player import Player
from proxy.talk.resume_tokens import ResumeTokens
from proxy.talk.timeline import Answer, BargeIn, Summary
from proxy.talk.wire import AUDIO_DELTAS, QUIET, append


class Talk(TalkLink):
    def __init__(
        self,
        opts: TalkOptions,
        source: Source,
        http: aiohttp.ClientSession,
        speaker: Speaker | None = None,
    ) -> None:
        super().__init__(opts, http)
        self.source, self.speaker = source, speaker
        self.player = Player()
        self.pending: list[bytes] = []
        self.frame_times: list[float] = []  # loop time each 20 ms input frame was captured
        self.padding_ms = 0
        self.answer: Answer | None = None
        # An answer the upstream cancelled before it told of the speech that cut it.
        self.cut: Answer | None = None
        self.speech_stopped_at: float | None = None
        self.last_event_at = self.t0

    async def send_audio(self, frame: bytes) -> None:
        await self.send(append(frame))
        self.summary.sent_ms += FRAME_MS

    async def became_ready(self) -> None:
        self.ready, self.resuming = True, False
        for frame in self.pending:
            await self.send_audio(frame)
        self.pending.clear()

    def input_time(self, input_ms: int) -> float:
        """Loop time at which input audio time ``input_ms`` was captured."""
        i = max(0, input_ms // FRAME_MS)
        return self.frame_times[i] if i < len(self.frame_times) else self.loop.time()

    async def on_event(self, ev: dict[str, Any]) -> None:
        now = self.loop.time()
        self.last_event_at = now
        self.summary.events += 1
        if isinstance(seq := ev.get("server_event_seq"), int):
            self.summary.seq(seq)
        kind = str(ev.get("type"))
        handler = getattr(self, "on_" + kind.replace(".", "_"), None)
        if kind in AUDIO_DELTAS:
            self.audio_delta(ev, now)
        elif handler is not None:
            await handler(ev, now)
        elif self.opts.verbose and kind not in QUIET:
            self.line(kind, str(ev.get("item_id") or ev.get("response_id") or ""))

    async def on_session_created(self, ev: dict[str, Any], now: float) -> None:
        session = ev.get("session") or {}
        caps = session.get("capabilities") or {}
        proxy = caps.get("proxy") or {}
        self.session_id, self.tokens = session.get("id"), ResumeTokens(ev.get("resume_token"))
        self.summary.session_id, self.summary.mode = self.session_id, proxy.get("mode")
        self.summary.upstream = proxy.get("upstream")
        audio = session.get("audio") or {}
        td = (audio.get("input") or {}).get("turn_detection") or {}
        self.padding_ms = int(td.get("prefix_padding_ms") or 0)
        rate = ((audio.get("output") or {}).get("format") or {}).get("rate")
        if isinstance(rate, int) and not self.player.heard:
            self.player.rate = rate
        up = self.summary.upstream
        said = "turn-based" if up is None else ",".join(k for k, v in up.items() if v is True)
        self.line("session.created", f"mode={self.summary.mode} upstream: {said}")
        await self.became_ready()

    async def on_session_resumed(self, ev: dict[str, Any], now: float) -> None:
        self.tokens.given(ev.get("resume_token"))
        resume = self.summary.resumes[-1] if self.summary.resumes else None
        if resume is not None and self.drop_started is not None:
            resume.took_ms = round((now - self.drop_started) * 1000)
        self.line("session.resumed", f"in {resume.took_ms if resume else '?'} ms")
        await self.became_ready()

    async def on_input_audio_buffer_speech_started(self, ev: dict[str, Any], now: float) -> None:
        start = int(ev.get("audio_start_ms") or 0)
        onset = start + (self.padding_ms if start > 0 else 0)
        answer, cut, self.cut = self.answer or self.cut, self.cut, None
        if answer is not None or self.player.queued_bytes:
            detect = round((now - self.input_time(onset)) * 1000)
            self.line("speech_started", f"over the answer: detected in {detect} ms")
            await self.flush()
            if answer is not None and answer.barge_in is None:
                answer.barge_in = BargeIn(onset_ms=onset, detect_ms=detect)
                answer.onset_at = self.input_time(onset)
                if answer is cut:
                    self.barge_in_done(answer)
        else:
            self.line("speech_started", f"at {onset} ms of input")

    async def on_input_audio_buffer_speech_stopped(self, ev: dict[str, Any], now: float) -> None:
        self.speech_stopped_at = now
        self.line("speech_stopped", f"at {ev.get('audio_end_ms')} ms of input")

    async def on_response_created(self, ev: dict[str, Any], now: float) -> None:
        self.answer, self.cut = Answer(id=str((ev.get("response") or {}).get("id"))), None
        self.line("response.created", self.answer.id)

    def audio_delta(self, ev: dict[str, Any], now: float) -> None:
        pcm = pybase64.b64decode(str(ev.get("delta", "")))
        self.player.push(str(ev.get("item_id")), str(ev.get("response_id")), pcm)
        answer = self.answer
        if answer is None:
            return
        answer.last_delta_at = now
        if not answer.first_audio:
            answer.first_audio = True
            after = ""
            if self.speech_stopped_at is not None:
                ms = round((now - self.speech_stopped_at) * 1000)
                self.summary.first_audio_ms.append(ms)
                self.speech_stopped_at = None  # one turn end, one first-audio latency
                after = f"{ms} ms after speech_stopped"
            self.line("first audio", after)

    async def on_response_done(self, ev: dict[str, Any], now: float) -> None:
        response = ev.get("response") or {}
        status = str(response.get("status"))
        details = response.get("status_details") or {}
        reason = details.get("reason") or (details.get("error") or {}).get("code")
        self.summary.responses[status] = self.summary.responses.get(status, 0) + 1
        answer, self.answer = self.answer, None
        self.line("response.done", status + (f" ({reason})" if reason else ""))
        if status != "cancelled" or answer is None:
            return
        await self.flush()
        answer.done_at = now
        if answer.barge_in is not None:
            self.barge_in_done(answer)
        elif reason == "turn_detected":
            self.cut = answer  # cut by the upstream first: its speech_started comes next

    def barge_in_done(self, answer: Answer) -> None:
        b = answer.finish()
        self.summary.barge_ins.append(b)
        self.line("barge-in", f"stop {b.stop_ms} ms, cut {b.cut_ms} ms after speech onset")

    async def flush(self) -> None:
        """Drop the audio queued for playback, and say where playback stopped."""
        ack, dropped = self.player.flush()
        if ack is not None:
            await self.send(ack)
            self.line("playback.flushed", f"heard {ack['played_ms']} ms, dropped {dropped} ms")

    async def on_conversation_item_truncated(self, ev: dict[str, Any], now: float) -> None:
        item, end = str(ev.get("item_id")), ev.get("audio_end_ms")
        heard = self.player.ms(self.player.played.get(item, 0))
        if self.summary.barge_ins and isinstance(end, int):
            self.summary.barge_ins[-1].truncated_at_ms = end
            self.summary.barge_ins[-1].heard_ms = heard
        self.line("item.truncated", f"{item} at {end} ms (heard here: {heard} ms)")

    async def on_error(self, ev: dict[str, Any], now: float) -> None:
        err = ev.get("error") if isinstance(ev.get("error"), dict) else {"message": ev.get("error")}
        self.summary.errors.append(err or {})
        self.line("error", f"{(err or {}).get('code')}: {(err or {}).get('message')}")
        code = str((err or {}).get("code"))
        # ``upstream_unavailable`` before the resume was answered refused the resume.
        refused = code.startswith("session_resume") or code == "invalid_resume_token"
        if refused or (code == "upstream_unavailable" and self.resuming):
            self.resume_refused(code, ev.get("resume_token"))

    async def on_session_resync_required(self, ev: dict[str, Any], now: float) -> None:
        # A native client's word for a resume the journal cannot serve any more
        # (proxy/resume/native_answer.py).
        self.line("session.resync_required", str(ev.get("reason")))
        self.resume_refused("session_resume_gap", None)

    def finished(self, now: float) -> bool:
        if now - self.t0 >= self.opts.max_s or self.gave_up:
            return True
        idle = self.answer is None and not self.player.queued_bytes and self.ready
        return self.source.ended and idle and now - self.last_event_at >= self.opts.tail_s

    async def run(self) -> Summary:
        await self.connect(resume=False)
        while True:
            frame = await self.source.next_frame()
            now = self.loop.time()
            self.frame_times.append(now)
            if self.ready:
                await self.send_audio(frame)
            else:
                self.pending.append(frame)
            for ack in self.player.tick(FRAME_MS):
                await self.send(ack)
            if self.speaker is not None:
                self.speaker.write(self.player.last(FRAME_MS))
            drop_at = self.opts.drop_at_s
            if drop_at is not None and not self.dropped and now - self.t0 >= drop_at:
                await self.drop()
            if self.finished(now):
                break
        await self.close()
        return self.summary

    async def close(self) -> None:
        self.closing = True
        await self.send({"type": "session.close"})
        if self.ws is not None:
            with contextlib.suppress(TimeoutError, ConnectionError):
                await asyncio.wait_for(self.ws.close(), 2.0)
        for task in list(self.tasks):
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        self.source.close()
        if self.speaker is not None:
            self.speaker.close()
        self.summary.received_ms = self.player.ms(self.player.received_bytes)
        self.summary.played_ms = self.player.played_ms
        if self.opts.out is not None:
            write_wav(self.opts.out, bytes(self.player.heard), self.player.rate)
