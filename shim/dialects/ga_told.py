"""What a GA relay session tells its client, finished: each assistant item in GA's
order (``ga_item_order.py``), the create a refusal answers named
(``ga_create_ids.py``), the client's metadata in its response
(``ga_response_create.py``). One place, so that the relay keeps each in step with
the upstream session: a gone or fresh one answers no create still waiting, while one
that resumes on a new socket (``session.resumed``: ``duplex_relay.py``) replays the
answers to those it had, so they stay waiting."""

from __future__ import annotations

from shim.actions import AbortUpstream, Action, SendClient
from shim.dialects.ga_create_ids import CreateIds
from shim.dialects.ga_item_order import AssistantItemOrder
from shim.dialects.ga_response_create import ResponseMetadata
from shim.inputs import ClientEvent, Input, UpstreamEvent, UpstreamLost, UpstreamReattached

COMMIT, COMMITTED = "input_audio_buffer.commit", "input_audio_buffer.committed"
# vLLM-Omni's refusals of a client's commit (engine/duplex/realtime_events.py
# ``resolve_commit``: an empty buffer, its VAD having committed it first;
# engine/duplex/session/runner.py ``_on_commit``: the append before it failed). The
# proxy sends no commit of its own, so each refuses one of the client's.
COMMIT_REFUSALS = frozenset({"input_audio_buffer_empty", "commit_aborted"})


class ToldToClient:
    __slots__ = ("_client_commits", "create_ids", "item_order", "metadata")

    def __init__(self) -> None:
        self.metadata = ResponseMetadata()
        self.create_ids, self.item_order = CreateIds(), AssistantItemOrder()
        # The client's own commits under server VAD, not yet committed upstream: the
        # upstream answers none of them itself (a commit asks for no response).
        self._client_commits = 0

    def told(self, inp: Input, actions: list[Action], vad_answers: bool) -> list[Action]:
        """``actions`` as they go out after ``inp``; ``vad_answers``: the upstream answers
        its server VAD's commits itself (the session's ``create_response``)."""
        upstream = isinstance(inp, UpstreamEvent)
        kind = inp.event.get("type") if isinstance(inp, UpstreamEvent) else None
        if self.upstream_gone(inp, actions):
            self.create_ids.forget()
            self.metadata.forget()
            self._client_commits = 0
        elif kind == "error" and _error_code(inp) in COMMIT_REFUSALS:
            # Refused, never committed: the upstream's next commit is its VAD's.
            self._client_commits = max(0, self._client_commits - 1)
        elif kind == COMMITTED and self._client_commits:
            self._client_commits -= 1
        elif kind == COMMITTED and vad_answers:
            self.create_ids.auto_due = True
        elif isinstance(inp, ClientEvent) and inp.event.get("type") == COMMIT and vad_answers:
            refused = any(
                isinstance(a, SendClient) and a.event.get("type") == "error" for a in actions
            )
            self._client_commits += 0 if refused else 1
        out: list[Action] = []
        for action in self.item_order.ordered(actions):
            if isinstance(action, SendClient):
                ev = action.event
                own = ev.get("type") == "response.created" and self.create_ids.auto_due
                ev = self.create_ids.named(ev, upstream)
                action = SendClient(self.metadata.told(ev, answers_create=not own))
            out.append(action)
        return out

    @staticmethod
    def upstream_gone(inp: Input, actions: list[Action]) -> bool:
        """The upstream session is gone or fresh after ``inp``: given up (its loss not
        to be resumed, ``AbortUpstream``), or a new one created. A loss the relay asks
        to resume (``ResumeUpstream``) is not: the same session comes back."""
        if isinstance(inp, UpstreamLost) and not inp.resume:
            return True
        if any(isinstance(a, AbortUpstream) for a in actions):
            return True
        event = inp.event if isinstance(inp, UpstreamEvent | UpstreamReattached) else {}
        return event.get("type") == "session.created"


def _error_code(inp: Input) -> object:
    err = inp.event.get("error") if isinstance(inp, UpstreamEvent) else None
    return err.get("code") if isinstance(err, dict) else None
