"""What a GA relay session tells its client, finished: each assistant item in GA's
order (``ga_item_order.py``), the create a refusal answers named
(``ga_create_ids.py``), the client's metadata in its response
(``ga_response_create.py``). One place, so that the relay keeps each in step with
the upstream session: a gone or fresh one answers no create still waiting; one that
resumes on a new socket (``session.resumed``: ``duplex_relay.py``) replays the
answers to those it received, but a create or a commit written into the dying
socket may never have reached it, so those waiting then are doubtful: no name, no
metadata (``CreateIds.resumed``), while those sent after it are named again."""

from __future__ import annotations

import orjson

from shim.actions import (
    AbortUpstream,
    Action,
    AnalyzeAudio,
    ForwardUpstream,
    SendClient,
    SendUpstream,
)
from shim.dialects.ga_create_ids import COMMIT_REFUSALS, CreateIds
from shim.dialects.ga_item_order import AssistantItemOrder
from shim.dialects.ga_item_refusals import ANSWERS, KEPT_TYPES, ItemRequests
from shim.dialects.ga_response_create import ResponseMetadata
from shim.inputs import ClientEvent, Input, UpstreamEvent, UpstreamLost, UpstreamReattached

COMMIT, COMMITTED = "input_audio_buffer.commit", "input_audio_buffer.committed"
APPEND = "input_audio_buffer.append"
# Since the last ``input_audio_buffer.committed`` taken for the client's commit:
# nothing else (TAKEN), or a response.created that answered a create (ANSWERED).
NONE, TAKEN, ANSWERED = 0, 1, 2


class ToldToClient:
    __slots__ = (
        "_client_commits",
        "_doubtful_commits",
        "_taken",
        "create_ids",
        "item_order",
        "items",
        "metadata",
    )

    def __init__(self) -> None:
        self.metadata = ResponseMetadata()
        self.create_ids, self.item_order = CreateIds(), AssistantItemOrder()
        self.items = ItemRequests()  # an unknown item's refusal in GA's code
        # The client's own commits under server VAD, not yet committed upstream: the
        # upstream answers none of them itself (a commit asks for no response).
        self._client_commits = 0
        # Those in flight when the upstream resumed: committed later, or never.
        self._doubtful_commits = 0
        self._taken = NONE

    def told(self, inp: Input, actions: list[Action], vad_answers: bool) -> list[Action]:
        """``actions`` as they go out after ``inp``; ``vad_answers``: the upstream answers
        its server VAD's commits itself (the session's ``create_response``)."""
        if _audio_only(inp, actions) and not self.item_order.holding():
            return list(actions)  # no case below applies: nothing is named, held or told
        upstream = isinstance(inp, UpstreamEvent)
        kind = inp.event.get("type") if isinstance(inp, UpstreamEvent) else None
        if self.upstream_gone(inp, actions):
            self.create_ids.forget()
            self.metadata.forget()
            self.items.forget()
            self._client_commits = self._doubtful_commits = 0
            self._taken = NONE
        elif isinstance(inp, UpstreamReattached):  # its own session back (session.resumed)
            self.create_ids.resumed()
            self.metadata.forget()  # the latest create's, which is doubtful
            self._doubtful_commits += self._client_commits
            self._client_commits, self._taken = 0, NONE
        elif kind == "error" and _error_code(inp) in COMMIT_REFUSALS:
            self._commit_refused(vad_answers)
        elif kind == COMMITTED and self._doubtful_commits:
            # A client commit that reached the upstream, or its VAD's: which response
            # answers which create is no longer known (an own response taken for a
            # create's answer would shift every name after it).
            self._doubtful_commits -= 1
            if vad_answers:
                self.create_ids.auto_maybe += 1
        elif kind == COMMITTED and self._client_commits:
            self._client_commits -= 1
            self._taken = TAKEN
        elif kind == COMMITTED and vad_answers:
            self.create_ids.auto_due = True
        elif isinstance(inp, ClientEvent) and _kept(inp.event.get("type")):
            if _went_upstream(inp, actions):  # not one the relay answered itself
                self.items.sent(inp.event)
        elif isinstance(kind, str) and kind in ANSWERS and isinstance(inp, UpstreamEvent):
            self.items.answered(inp.event)
        elif isinstance(inp, ClientEvent) and inp.event.get("type") == COMMIT and vad_answers:
            refused = any(
                isinstance(a, SendClient) and a.event.get("type") == "error" for a in actions
            )
            self._client_commits += 0 if refused else 1
        out: list[Action] = []
        for action in self.item_order.ordered(actions):
            if isinstance(action, SendClient):
                ev = action.event
                created = ev.get("type") == "response.created"
                own = created and self.create_ids.auto_due
                ev = self.items.named(self.create_ids.named(ev, upstream))
                mine = not own
                if created:
                    mine = self._answered(own)
                action = SendClient(self.metadata.told(ev, answers_create=mine))
            out.append(action)
        if kind == "response.done" and self._quiet(out):
            self.metadata.forget()  # asked by a create answered already
        return out

    def _quiet(self, out: list[Action]) -> bool:
        """The upstream ended a response (its own ``response.done`` told, not one of a
        response the proxy cut, which may still run upstream) with no client commit on
        its way, and the creates counted unsure are all answered (``CreateIds.drained``):
        naming and metadata start again, where one doubtful answer had ended them for
        the rest of the session."""
        told_done = any(
            isinstance(a, SendClient) and a.event.get("type") == "response.done" for a in out
        )
        if not told_done or self._client_commits or self._doubtful_commits:
            return False
        return self.create_ids.drained()

    def _answered(self, own: bool) -> bool:
        """A response.created went by, whose it was decided (``ga_create_ids.py``):
        whether it takes the metadata asked, the latest create's. Not if it may be a
        doubtful create's, nor while a create sent after the one it answers waits."""
        ids = self.create_ids
        if ids.doubted:
            self.metadata.forget()  # maybe a doubtful create's, maybe the latest's
        took = ids.took and not ids.doubted
        self._taken = ANSWERED if self._taken == TAKEN and took else NONE
        return not own and not ids.doubted and not (ids.took and ids.waiting)

    def _commit_refused(self, vad_answers: bool) -> None:
        """The upstream refused one of the client's commits: never committed. If the
        last committed was taken for the client's, it was the upstream VAD's, which
        committed the buffer while the client's commit was on its way."""
        taken, self._taken = self._taken, NONE
        if self._doubtful_commits:
            self._doubtful_commits -= 1
            return
        if taken == NONE or not vad_answers:
            self._client_commits = max(0, self._client_commits - 1)
            return
        if taken == ANSWERED:
            # Its answer already came, taken for the oldest create's: that one waits.
            self.create_ids.unsure(extra=1)
            self.metadata.forget()
        elif self._client_commits:
            # Or the committed was this commit's and the refusal another one's.
            self.create_ids.auto_maybe += 1
        else:
            self.create_ids.auto_due = True  # its answer is still to come
        self._client_commits = max(0, self._client_commits - 1)

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


def _audio_only(inp: Input, actions: list[Action]) -> bool:
    """A client's append answered only by its audio going upstream and to the VAD (most
    inputs of a session): no loss, no commit, no event for the client to name or order."""
    if type(inp) is not ClientEvent or inp.event.get("type") != APPEND:
        return False
    for action in actions:
        if type(action) is SendUpstream and action.event.get("type") == APPEND:
            continue
        if type(action) is not AnalyzeAudio:
            return False
    return True


def _went_upstream(inp: ClientEvent, actions: list[Action]) -> bool:
    """The client's event went on to the upstream: relayed (its item maybe renamed to
    the upstream's, ``ga_turn_order.py``), or sent as the relay read it."""
    kind = inp.event.get("type")
    for action in actions:
        if isinstance(action, SendUpstream) and action.event.get("type") == kind:
            return True
        if isinstance(action, ForwardUpstream) and isinstance(kind, str) and kind in action.raw:
            try:
                relayed = orjson.loads(action.raw)
            except orjson.JSONDecodeError:
                continue
            if isinstance(relayed, dict) and relayed.get("type") == kind:
                return True
    return False


def _error_code(inp: Input) -> object:
    err = inp.event.get("error") if isinstance(inp, UpstreamEvent) else None
    return err.get("code") if isinstance(err, dict) else None


def _kept(kind: object) -> bool:
    """A retrieve or delete the relay keeps (any JSON may come as a type)."""
    return isinstance(kind, str) and kind in KEPT_TYPES
