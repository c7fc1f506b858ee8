"""A GA relay session by script over an upstream that hands out resume tokens, bound to its
upstream session (``UP``) or not yet, and the session object behind the script."""

from __future__ import annotations

from shim.dialects.ga_relay import GaRelaySession
from shim.session import ShimSettings
from shim.vad_gate import VadParams
from tests.shim_script import Script

UP = "up-1"


def make(bound: bool = True) -> Script:
    settings = ShimSettings(vad=VadParams(), min_barge_in_ms=200, echo_suppression=False)
    caps = {"supports_barge_in": True, "supports_audio_truncate": False}
    session = GaRelaySession("sess_0123456789abcdef", "m", settings, caps)
    if bound:
        session.bind_upstream(
            {"type": "session.created", "session": {"id": UP}, "resume_token": "tok-1"}
        )
    return Script(session)


def ga(sc: Script) -> GaRelaySession:
    assert isinstance(sc.s, GaRelaySession)
    return sc.s
