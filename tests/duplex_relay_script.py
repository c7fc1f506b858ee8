"""barge_in_emulated sessions by script for the relay's tests: a relay over a duplex
upstream (bound to its upstream session or not), the upstream's responses and audio
deltas numbered as its journal numbers them, an answer cut by speech, and the playback
acks the proxy sends upstream."""

from __future__ import annotations

from shim.dialects.duplex_relay import BargeInRelaySession
from shim.session import ShimSettings
from shim.vad_gate import VadParams
from tests.shim_script import Script, pcm_b64, upstream_events

RID = "resp-duplex-1-0-abcd1234"
AID = f"item_{RID}"
UP = "duplex-up-1"


def make(truncates: bool = False, bound: bool = True) -> Script:
    settings = ShimSettings(vad=VadParams(), min_barge_in_ms=200, echo_suppression=False)
    caps = {"supports_barge_in": False, "supports_audio_truncate": truncates}
    session = BargeInRelaySession("sess_0123456789abcdef", "m", settings, caps)
    if bound:
        session.bind_upstream(
            {"type": "session.created", "session": {"id": UP}, "resume_token": "tok-1"}
        )
    return Script(session)


def relay(sc: Script) -> BargeInRelaySession:
    assert isinstance(sc.s, BargeInRelaySession)
    return sc.s


def start_response(sc: Script, chunks: int = 10, rate: int = 22050) -> list:  # type: ignore[type-arg]
    seq = iter(range(10, 1000))
    out = sc.upstream(
        {
            "type": "response.created",
            "response": {"id": RID, "status": "in_progress"},
            "server_event_seq": next(seq),
        }
    )
    for _ in range(chunks):
        out += sc.upstream(
            {
                "type": "response.output_audio.delta",
                "response_id": RID,
                "item_id": AID,
                "output_index": 0,
                "content_index": 0,
                "delta": pcm_b64(100, rate),
                "format": "pcm16",
                "sample_rate_hz": rate,
                "server_event_seq": next(seq),
            }
        )
        out += sc.upstream(
            {
                "type": "response.output_audio_transcript.delta",
                "response_id": RID,
                "item_id": AID,
                "delta": "word ",
                "server_event_seq": next(seq),
            }
        )
    return out


def audio_delta(rid: str, seq: int | None = None, rate: int = 22050) -> dict:  # type: ignore[type-arg]
    """100 ms of the response's audio from the upstream, journaled at ``seq`` if given."""
    ev = {
        "type": "response.output_audio.delta",
        "response_id": rid,
        "item_id": f"item_{rid}",
        "delta": pcm_b64(100, rate),
        "sample_rate_hz": rate,
    }
    return ev if seq is None else ev | {"server_event_seq": seq}


def play_response(sc: Script, rid: str, deltas: int, rate: int = 22050) -> list:  # type: ignore[type-arg]
    """A whole response of ``deltas`` x 100 ms of audio, generated at once."""
    out = sc.upstream({"type": "response.created", "response": {"id": rid}})
    for _ in range(deltas):
        out += sc.upstream(audio_delta(rid, rate=rate))
    out += sc.upstream({"type": "response.done", "response": {"id": rid, "status": "completed"}})
    return out


def cut_an_answer(sc: Script) -> list:  # type: ignore[type-arg]
    """An answer, speech over it that cuts it, then silence."""
    start_response(sc, chunks=10)
    out = sc.speak([0.9] * 10)
    sc.speak([0.05] * 20)
    return out


def acks(out: list) -> list[dict]:  # type: ignore[type-arg]
    return [e for e in upstream_events(out) if e["type"] == "playback.ack"]
