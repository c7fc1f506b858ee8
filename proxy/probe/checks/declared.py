"""Check 1, declared: what ``session.created`` says the session can do.

A vLLM-Omni duplex session declares ``session.capabilities``
(``DuplexCapabilities.as_dict``, ``docs/fidelity.md``); the proxy adds ``capabilities.proxy``.
A GA server declares nothing, and a turn-based one sends a flat
``session.created {id, created}`` (``docs/protocol.md``). The probe also reports what
happened to ``?duplex=1``: refused (``unsupported`` + close 1008) or silently
served turn-based.

Verdict: ``pass`` when duplex capabilities are declared and well-formed,
``unsupported`` when a realtime session declares nothing, ``fail`` when the
endpoint is turn-based or its declaration contradicts itself.
"""

from __future__ import annotations

from typing import Any

from proxy.probe.context import ProbeContext
from proxy.probe.handshake import OpenFailed
from proxy.probe.result import CheckResult, failed, passed

NAME = "declared"
FLAGS = (
    "supports_barge_in",
    "supports_playback_ack",
    "supports_audio_truncate",
    "supports_session_resume",
)
LEVELS = ("model_native_duplex", "turn_based_duplex")


def _declaration(caps: dict[str, Any]) -> dict[str, Any]:
    proxy = caps.get("proxy")
    return {
        "implementation_level": caps.get("implementation_level"),
        **{flag: caps.get(flag) for flag in FLAGS},
        "chunk_period_ms": caps.get("chunk_period_ms"),
        "target_barge_in_latency_ms": caps.get("target_barge_in_latency_ms"),
        "proxy_mode": proxy.get("mode") if isinstance(proxy, dict) else None,
    }


def _contradictions(caps: dict[str, Any], has_token: bool) -> list[str]:
    problems = [
        f"{flag} is {caps[flag]!r}, not a boolean"
        for flag in FLAGS
        if flag in caps and not isinstance(caps[flag], bool)
    ]
    level = caps.get("implementation_level")
    if level is not None and level not in LEVELS:
        problems.append(f"implementation_level {level!r} is none of {', '.join(LEVELS)}")
    target = caps.get("target_barge_in_latency_ms")
    if target is not None and (
        isinstance(target, bool) or not isinstance(target, int | float) or target <= 0
    ):
        problems.append(f"target_barge_in_latency_ms is {target!r}")
    if caps.get("supports_session_resume") is True and not has_token:
        problems.append("declares supports_session_resume but session.created has no resume_token")
    if caps.get("supports_barge_in") is False and caps.get("target_barge_in_latency_ms"):
        problems.append("declares a barge-in latency target without barge-in")
    return problems


def _short(data: dict[str, Any]) -> str:
    def yes(flag: str) -> str:
        value = data.get(flag)
        return "yes" if value is True else "no" if value is False else "?"

    parts = [str(data.get("implementation_level") or "level undeclared")]
    parts += [
        f"barge-in {yes('supports_barge_in')}",
        f"truncate {yes('supports_audio_truncate')}",
        f"ack {yes('supports_playback_ack')}",
        f"resume {yes('supports_session_resume')}",
    ]
    if data.get("target_barge_in_latency_ms"):
        parts.append(f"target {data['target_barge_in_latency_ms']} ms")
    if data.get("proxy_mode"):
        parts.append(f"proxy {data['proxy_mode']}")
    return ", ".join(parts)


async def run(ctx: ProbeContext) -> CheckResult:
    try:
        conn = await ctx.open()
    except OpenFailed as exc:
        return CheckResult(
            NAME,
            "error",
            f"no session: {exc}",
            {"code": exc.code, "close_code": exc.close_code},
        )
    try:
        info = conn.info
        assert info is not None
        ctx.endpoint = info
        data: dict[str, Any] = {
            "dialect": info.dialect,
            "url": info.url,
            "duplex_refused": info.duplex_refused,
            "session_id": info.session_id,
            "resume_token": info.resume_token is not None,
            "session_update_error": info.update_error,
        }
        notes = list(info.notes)
        if info.update_error:
            notes.append(
                "session.update declaring pcm16 24 kHz was refused: "
                f"{info.update_error['code']}: {info.update_error['message']}"
            )
        refused = info.duplex_refused
        how = (
            f"?duplex=1 refused ({refused.get('code') or 'no error event'}, "
            f"close {refused.get('close_code')})"
            if refused
            else "?duplex=1 served turn-based silently"
        )
        if info.dialect == "turn":
            data["capabilities"] = None
            return failed(NAME, [f"turn-based: declares nothing; {how}"], data, notes)
        caps = info.capabilities
        if caps is None:
            data["capabilities"] = None
            summary = "declares no capabilities (GA-style session.created)"
            if refused:
                summary += f"; {how}"
            return CheckResult(NAME, "unsupported", summary, data, notes)
        declared = _declaration(caps)
        data["capabilities"] = declared
        problems = _contradictions(caps, info.resume_token is not None)
        if refused:
            problems.append(f"declares duplex capabilities although {how}")
        if problems:
            return failed(NAME, problems, data, notes)
        return passed(NAME, _short(declared), data, notes)
    finally:
        await conn.close()
