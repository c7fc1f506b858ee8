"""A failed resume, told in the words of the client's protocol.

A GA client gets the proxy's codes (docs/protocol.md, "Errors"). A native client gets
vLLM-Omni's, which its ``DuplexClient`` acts on: ``invalid_resume_token``,
``session_resume_expired``, ``session_resume_conflict`` end its resume at once, and a
journal that no longer holds what it missed is a ``session.resync_required``
(``reason: journal_gap``), not an error; any other code it retries with backoff. The
proxy's own codes with no vLLM-Omni counterpart (``session_resume_unavailable``: try
again) stay as they are; a passthrough upstream's refusal reaches a native client with
the upstream's own code.
"""

from __future__ import annotations

from proxy.client_io import ClientChannel
from proxy.resume.request import ResumeFailed


def tell_failed_resume(client: ClientChannel, failed: ResumeFailed, session_id: object) -> None:
    token = {"resume_token": failed.resume_token} if failed.resume_token else None
    if not client.native:
        client.send_error(failed.code, str(failed), extra=token)
        return
    if failed.code == "session_resume_gap" and isinstance(session_id, str):
        resync = {"type": "session.resync_required", "session_id": session_id}
        client.send_event(resync | {"reason": "journal_gap"})
        return
    client.send_error(failed.native_code or failed.code, str(failed), extra=token)
