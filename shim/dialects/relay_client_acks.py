"""A client's ``playback.ack``, told to the upstream in the upstream's own measure.

In ``barge_in_emulated`` the client hears the upstream's audio after the proxy has
resampled it to the client's rate, so its ``played_ms`` (vLLM-Omni's
``DuplexClient`` counts the bytes it played) can fall a few milliseconds short of
what the upstream counts as sent. A vLLM-Omni upstream owns playback by acks
(``docs/fidelity.md``, row 1): an answer acknowledged short of its end stays in
progress, and the client's next commit is only acknowledged. So an ack that covers
everything the proxy has sent of the answer, with nothing held back, is passed on
as the whole of what the upstream sent; any other ack passes unchanged.
"""

from __future__ import annotations

import math
from typing import Any

from shim.output import ActiveResponse
from shim.playback import ItemPlayback


def in_upstream_measure(
    ev: dict[str, Any],
    item: ItemPlayback | None,
    resp: ActiveResponse | None,
    upstream_audio_ms: float,
) -> dict[str, Any]:
    played = ev.get("played_ms")
    if item is None or resp is None or resp.item_id != item.item_id or resp.held:
        return ev
    if not isinstance(played, int | float) or played + 1 < item.sent_ms:
        return ev
    full = math.ceil(upstream_audio_ms - 1e-6)
    if full <= played:
        return ev
    out = {**ev, "played_ms": full}
    committed = ev.get("committed_ms")
    if not isinstance(committed, int | float) or committed >= played:
        out["committed_ms"] = full
    return out
