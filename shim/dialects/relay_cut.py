"""The proxy's own cut of an upstream answer (a barge-in it decided): what goes upstream.

The proxy decides a cut by what it has seen of the answer, which lags the upstream:
the upstream may have finished generating the answer while its ``response.done`` is
still on the way. vLLM-Omni refuses a ``response.cancel`` of an answer it has
finished (``response_not_active``, "Response is already complete") and that
answer's playback then stays in progress to it until acknowledged in full, so the
user's next turn is only acknowledged, or dropped as an interjection
(``docs/fidelity.md``, row 1a). Its ``output_audio_buffer.clear`` naming the answer
has no such race: it cancels the answer while it is generated (``response.done``,
reason ``output_audio_buffer_clear``), ends its playback once it is generated, is
never refused, and is a no-op for an answer a newer one has replaced. Unlike a
cancel it also leaves the user's committed audio alone, which may be the very turn
that cut the answer. So the cut is the ack of what was heard (the upstream keeps
that much of the answer), then the clear; everything the upstream sends for the
answer after that, ``output_audio_buffer.cleared`` included, answers the proxy and
is kept from the client (``relay_upstream.screen``, by ``cancelled_ids``).
"""

from __future__ import annotations

from collections import deque

from shim.actions import SendUpstream
from shim.dialects.relay_reports import PlaybackReporter

CLEAR = "output_audio_buffer.clear"


def clear(cancelled_ids: deque[str], rid: str) -> SendUpstream:
    """Stop the upstream's answer ``rid``, generated or not; its replies are the proxy's."""
    if rid not in cancelled_ids:
        cancelled_ids.append(rid)
    return SendUpstream({"type": CLEAR, "response_id": rid})


def cut(
    reports: PlaybackReporter, cancelled_ids: deque[str], item_id: str, rid: str, played: int
) -> list[SendUpstream]:
    """What was heard of the answer, then its end upstream."""
    return [SendUpstream(reports.heard_ack(item_id, rid, played)), clear(cancelled_ids, rid)]
