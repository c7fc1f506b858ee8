"""What ``talk`` prints: one line per event that matters, with times and latencies,
then a summary (``--json``: as one JSON object on the last line)."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass, field
from typing import Any, TextIO


@dataclass
class BargeIn:
    onset_ms: int  # input audio time of the speech onset
    detect_ms: int  # onset -> speech_started received
    stop_ms: int | None = None  # onset -> last audio delta of the cut response received
    cut_ms: int | None = None  # onset -> response.done (cancelled) received; < 0: it came first
    truncated_at_ms: int | None = None  # conversation.item.truncated audio_end_ms
    heard_ms: int | None = None  # what this client had played of that item


@dataclass
class Answer:
    """The response in progress, and a barge-in over it if there is one (loop times)."""

    id: str
    first_audio: bool = False
    last_delta_at: float = 0.0
    barge_in: BargeIn | None = None
    onset_at: float = 0.0
    done_at: float = 0.0

    def finish(self) -> BargeIn:
        """The barge-in's latencies, once the response is over and the onset known."""
        assert self.barge_in is not None
        self.barge_in.stop_ms = max(0, round((self.last_delta_at - self.onset_at) * 1000))
        self.barge_in.cut_ms = round((self.done_at - self.onset_at) * 1000)
        return self.barge_in


@dataclass
class Resume:
    after_seq: int
    first_seq: int | None = None
    took_ms: int | None = None  # drop -> session.resumed

    @property
    def ok(self) -> bool:
        return self.first_seq is None or self.first_seq == self.after_seq + 1


@dataclass
class Summary:
    mode: str | None = None
    session_id: str | None = None
    upstream: dict[str, Any] | None = None
    events: int = 0
    last_seq: int = 0
    lost: int = 0
    duplicated: int = 0
    sent_ms: int = 0
    received_ms: int = 0
    played_ms: int = 0
    responses: dict[str, int] = field(default_factory=dict)  # status -> count
    first_audio_ms: list[int] = field(default_factory=list)  # speech_stopped -> first delta
    barge_ins: list[BargeIn] = field(default_factory=list)
    resumes: list[Resume] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)

    def seq(self, seq: int) -> None:
        """Count gaps and repeats in ``server_event_seq``."""
        if seq <= self.last_seq:
            self.duplicated += 1
        elif seq > self.last_seq + 1 and self.last_seq > 0:
            self.lost += seq - self.last_seq - 1
        if self.resumes and self.resumes[-1].first_seq is None:
            self.resumes[-1].first_seq = seq
        self.last_seq = max(self.last_seq, seq)

    @property
    def ok(self) -> bool:
        resumed = all(r.ok and r.first_seq is not None for r in self.resumes)
        return not self.errors and self.lost == 0 and self.duplicated == 0 and resumed

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for resume, out in zip(self.resumes, data["resumes"], strict=True):
            out["ok"] = resume.ok
        data["ok"] = self.ok
        return data


class Timeline:
    def __init__(self, t0: float, out: TextIO = sys.stdout) -> None:
        self.t0 = t0
        self.out = out

    def line(self, now: float, kind: str, detail: str = "") -> None:
        print(f"{now - self.t0:8.3f}s  {kind:<34} {detail}".rstrip(), file=self.out, flush=True)

    def summary(self, s: Summary, as_json: bool) -> None:
        if as_json:
            print(json.dumps(s.as_dict()), file=self.out, flush=True)
            return
        p = self.out
        print(f"\nmode {s.mode}  session {s.session_id}", file=p)
        print(
            f"events {s.events} (last seq {s.last_seq}, lost {s.lost}, dup {s.duplicated})", file=p
        )
        print(
            f"audio sent {s.sent_ms} ms, received {s.received_ms} ms, played {s.played_ms} ms",
            file=p,
        )
        print(f"responses {s.responses}", file=p)
        if s.first_audio_ms:
            print(f"first audio after speech_stopped: {s.first_audio_ms} ms", file=p)
        for b in s.barge_ins:
            cut = f"barge-in at {b.onset_ms} ms of input: detect {b.detect_ms} ms, "
            cut += f"stop {b.stop_ms} ms, cut {b.cut_ms} ms"
            if b.truncated_at_ms is not None:
                cut += f", truncated at {b.truncated_at_ms} ms (heard {b.heard_ms} ms)"
            print(cut, file=p)
        for r in s.resumes:
            state = "nothing lost" if r.ok else "GAP"
            print(
                f"resume after seq {r.after_seq}: next {r.first_seq}, {state}, {r.took_ms} ms",
                file=p,
            )
        for e in s.errors:
            print(f"error {e.get('code')}: {e.get('message')}", file=p)
        p.flush()
