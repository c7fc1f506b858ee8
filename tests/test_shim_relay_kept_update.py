"""A fresh upstream session of the barge-in relay gets every setting the client's
updates gave the one before, not only the last update's (``shim/dialects/
relay_kept_update.py``): vLLM-Omni applies each update over the session it has
(``engine/duplex/config.py``, ``apply_realtime_update``), so after a lost upstream or a
move to another replica the new one is given them all, folded into one update."""

from __future__ import annotations

import ast
import copy
import sys
import types as modules
import zipfile
from typing import Any
from unittest import mock

import pytest

from shim import snapshot
from shim.actions import Action
from shim.dialects.duplex_relay import BargeInRelaySession
from shim.dialects.relay_kept_update import folded
from shim.inputs import UpstreamLost
from tests.duplex_relay_script import make
from tests.shim_script import Script, client_events, upstream_events
from tests.test_native_g711_rates import wheel_session
from tests.test_native_resume_object import wheel_turns
from tests.test_shim_ga_relay import make as make_ga
from tests.vllm_omni_client import VERSION, WHEEL

__all__ = ["wheel_session", "wheel_turns"]

VAD = {"type": "server_vad", "silence_duration_ms": 400}
POLICIES = ("overlap_policy", "playback_commit_policy")
BARGE_IN = "barge_in_on_speech"
ACK = "ack_only"
VOICE_ECHO = {"audio": {"output": {"voice": "echo", "format": {"type": "audio/g711_ulaw"}}}}
# Updates naming a setting another way than the ones before, or by a value vLLM-Omni
# ignores (``engine/duplex/config.py``, ``apply_realtime_update``).
SEQUENCES: list[tuple[dict[str, Any], ...]] = [
    ({"voice": "alloy"}, {"audio": {"output": {"voice": "echo"}}}),
    (VOICE_ECHO, {"voice": None}),
    ({"speed": 1.5}, {"audio": {"output": {"speed": 0.8}}}, {"instructions": "x"}),
    ({"max_response_output_tokens": 100}, {"max_output_tokens": 200}),
    ({"max_output_tokens": 100}, {"max_tokens": 50, "max_response_output_tokens": "inf"}),
    ({"modalities": ["text", "audio"]}, {"output_modalities": ["audio"]}),
    ({"output_modalities": ["audio"]}, {"modalities": ["text", "audio"]}),
    ({"extra_body": {"overlap_policy": "barge_in", "a": 1}}, {"extra_body": None}),
    (
        {**VOICE_ECHO, "instructions": "x"},
        {"audio": {"input": {"turn_detection": VAD}}},
        {"audio": None, "temperature": None},
    ),
    ({"audio": {"output": {"voice": "echo"}}}, {"audio": {"output": None}, "voice": 7}),
    ({"temperature": 0.5, "instructions": "x"}, {"temperature": None, "instructions": 3}),
    (
        {"input_audio_transcription": {"model": "a"}},
        {"audio": {"input": {"transcription": {"model": "b"}}}},
    ),
    (
        {"audio": {"input": {"transcription": {"model": "b"}}}},
        {"input_audio_transcription": None},
    ),
    ({"input_audio_noise_reduction": {"type": "near_field"}}, {"audio": {"input": {}}}),
    (
        {"audio": {"input": {"format": {"type": "audio/pcm", "rate": 16000}}}},
        {"input_audio_noise_reduction": {"type": "far_field"}},
    ),
    ({"tools": [{"type": "function", "name": "f"}]}, {"tools": "none"}, {"tool_choice": "auto"}),
    # The two policies vLLM-Omni reads flat and from ``extra_body`` (that one wins in
    # one update); a later update in either spelling replaces the earlier one, a
    # named turn detection sets the overlap policy it implies.
    ({"extra_body": {"overlap_policy": BARGE_IN}}, {"overlap_policy": "listen_only"}),
    ({"overlap_policy": "listen_only", "extra_body": {"overlap_policy": BARGE_IN}},),
    ({"overlap_policy": "listen_only"}, {"extra_body": {"overlap_policy": BARGE_IN}}),
    ({"extra_body": {"overlap_policy": BARGE_IN}}, {"turn_detection": None}),
    ({"turn_detection": VAD}, {"extra_body": {"overlap_policy": "listen_only"}}),
    ({"turn_detection": VAD}, {"overlap_policy": "listen_only"}, {"instructions": "x"}),
    ({"turn_detection": VAD, "extra_body": {"overlap_policy": "listen_only"}}, {"voice": "a"}),
    ({"extra_body": {"overlap_policy": BARGE_IN}}, {"extra_body": {"overlap_policy": 7}}),
    ({"extra_body": {"playback_commit_policy": ACK}}, {"playback_commit_policy": "commit_all"}),
    (
        {"playback_commit_policy": ACK, "extra_body": {"playback_commit_policy": "x"}},
        {"extra_body": {"a": 1}},
    ),
    (
        {"playback_commit_policy": "commit_all_on_done"},
        {"extra_body": {"playback_commit_policy": ACK}},
    ),
]


def updated(sc: Script, *sessions: dict[str, Any]) -> list[dict[str, Any]]:
    """The client's updates, one by one: the sessions the upstream got."""
    sent: list[dict[str, Any]] = []
    for session in sessions:
        out = sc.client({"type": "session.update", "session": session})
        assert not [e for e in client_events(out) if e["type"] == "error"], out
        ups = [e for e in upstream_events(out) if e["type"] == "session.update"]
        sent += [e["session"] for e in ups]
    return sent


@pytest.fixture(scope="module")
def wheel_config(
    wheel_session: modules.ModuleType,
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[modules.ModuleType, dict[str, modules.ModuleType]]:
    """``engine/duplex/config.py`` from the 0.30.0 wheel ``wheel_session`` fetched, and
    the modules its ``apply_realtime_update`` imports, made of the wheel's own
    ``protocol/realtime`` modules and ``engine/duplex/realtime_commands.py``'s
    ``duplex_response_format`` (installed only while it runs: ``read_by_wheel``)."""
    store = getattr(request.config, "cache", None)
    name = f"vllm-omni-{VERSION}"
    places = [store.mkdir(name)] if store is not None else []
    places += sorted(tmp_path_factory.getbasetemp().glob(f"{name}*"))
    wheel = next(p / WHEEL for p in places if (p / WHEEL).is_file())
    with zipfile.ZipFile(wheel) as archive:
        config_src = archive.read("vllm_omni/engine/duplex/config.py").decode()
        commands_src = archive.read("vllm_omni/engine/duplex/realtime_commands.py").decode()
    commands = modules.ModuleType("vllm_omni.engine.duplex.realtime_commands")
    (fn,) = [
        node
        for node in ast.parse(commands_src).body
        if isinstance(node, ast.FunctionDef) and node.name == "duplex_response_format"
    ]
    exec(compile(ast.Module([fn], []), "realtime_commands.py", "exec"), commands.__dict__)
    protocol = modules.ModuleType("vllm_omni.protocol.duplex")
    for part in (sys.modules["wheel_realtime_formats"], wheel_session):
        protocol.__dict__.update((k, v) for k, v in vars(part).items() if k[:2] != "__")
    config = modules.ModuleType("wheel_duplex_config")
    stubs = {m.__name__: m for m in (commands, protocol, config)}
    with mock.patch.dict(sys.modules, stubs):
        exec(compile(config_src, "config.py", "exec"), config.__dict__)
    return config, stubs


def given(out: list[Action]) -> dict[str, Any]:
    """The session a fresh upstream is given."""
    (restore,) = [e for e in upstream_events(out) if e["type"] == "session.update"]
    session: dict[str, Any] = restore["session"]
    return session


def lost(sc: Script) -> dict[str, Any]:
    """The upstream is lost for good: the session the fresh one is given."""
    return given(sc.s.handle(UpstreamLost("resume refused", sc.now, resume=False)))


def test_a_fresh_upstream_gets_the_settings_of_every_update() -> None:
    sc = make()
    updated(
        sc,
        {"instructions": "Be brief.", "turn_detection": VAD, "extra_body": {"a": 1}},
        {"voice": "alloy", "extra_body": {"b": 2}},
        {"tools": [], "instructions": None},
        {"instructions": "Be kind."},
    )
    session = lost(sc)
    assert session["instructions"] == "Be kind."
    assert session["voice"] == "alloy"
    assert session["tools"] == []
    assert session["turn_detection"] == VAD
    assert session["extra_body"] == {"a": 1, "b": 2}  # merged into, as vLLM-Omni does


def test_an_update_naming_the_turn_detection_anywhere_replaces_it() -> None:
    sc = make()
    updated(
        sc,
        {"turn_detection": VAD, "overlap_policy": "barge_in_on_speech", "instructions": "x"},
        {"audio": {"input": {"turn_detection": None}}},
    )
    session = lost(sc)
    assert "turn_detection" not in session and "overlap_policy" not in session, session
    assert session["audio"]["input"]["turn_detection"] is None
    assert session["instructions"] == "x"


@pytest.mark.parametrize(
    "updates",
    [
        [
            {"input_audio_format": "g711_ulaw", "sample_rate_hz": 8000},
            {"audio": {"input": {"format": {"type": "audio/pcm", "rate": 24000}}}},
        ],
        [{"sample_rate_hz": 24000}, {"input_audio_format": "pcm16"}, {"instructions": "x"}],
        [
            {"audio": {"input": {"format": {"type": "audio/pcm", "rate": 24000}}}},
            {"audio": {"input": {"sample_rate_hz": 16000}}},
        ],
        [
            {"audio": {"output": {"format": {"type": "audio/g711_alaw"}}}},
            {"audio": {"output": {"format": {"type": "audio/pcm", "rate": 16000}}}},
            {"instructions": "x"},
        ],
        *[[*each] for each in SEQUENCES],
    ],
)
def test_the_given_formats_read_as_the_updates_did(
    wheel_session: modules.ModuleType, updates: list[dict[str, Any]]
) -> None:
    """Read by vLLM-Omni's own reader, the one update a fresh upstream gets declares
    the formats and rates the updates, one after the other, did."""
    sc = make()
    updated(sc, *updates)
    stepwise = wheel_session.RealtimeInputDefaults()
    for each in updates:
        stepwise = stepwise.with_session_payload(each)
    once = wheel_session.RealtimeInputDefaults().with_session_payload(lost(sc))
    assert once == stepwise


def test_a_move_opens_the_fresh_upstream_with_every_setting() -> None:
    """A replica that takes the session over opens its fresh upstream session with the
    snapshot's settings (``shim/snapshot.py``, ``opening_session``), and gives them
    again after a loss of its own."""
    sc = make()
    updated(sc, {"instructions": "Be brief.", "turn_detection": VAD}, {"voice": "alloy"})
    wire = sc.s.snapshot()
    opening = snapshot.opening_session(wire)
    assert opening is not None
    assert (opening["instructions"], opening["voice"]) == ("Be brief.", "alloy")
    assert opening["turn_detection"] == VAD
    taken = make(bound=False)
    assert isinstance(taken.s, BargeInRelaySession)
    taken.s.restore(wire)
    updated(taken, {"tools": []})
    session = lost(taken)
    assert (session["instructions"], session["voice"], session["tools"]) == (
        "Be brief.",
        "alloy",
        [],
    )


def test_a_ga_clients_fresh_upstream_gets_the_settings_of_every_update() -> None:
    sc = make_ga()
    updated(sc, {"type": "realtime", "instructions": "Be brief."})
    updated(sc, {"type": "realtime", "audio": {"output": {"voice": "alloy"}}})
    session = lost(sc)
    assert session["instructions"] == "Be brief."
    assert session["audio"]["output"]["voice"] == "alloy"
    assert session["turn_detection"]["type"] == "server_vad"


Wheel = tuple[modules.ModuleType, dict[str, modules.ModuleType]]


def read_by_wheel(
    wheel: Wheel, turns: modules.ModuleType, *updates: dict[str, Any]
) -> dict[str, Any]:
    """The session vLLM-Omni has after the updates, one by one, over a fresh one, each
    checked and its turn detection normalized first as ``on_session_update`` does
    (``engine/duplex/turn_detection.py``: a named turn detection sets the overlap
    policy it implies). Left out: its echoes of the last update and of its ``audio``
    object, which a fresh upstream echoes as the one update it got, and the policies'
    copies ``extra_body`` keeps, which it reads into its own fields only (compared)."""
    config, stubs = wheel
    session = config.DuplexSessionConfig()
    with mock.patch.dict(sys.modules, stubs):
        for each in updates:
            payload = copy.deepcopy(dict(each))
            assert turns.validate_realtime_turn_detection(payload) is None, payload
            turns.normalize_turn_detection_session_payload(payload)
            session.apply_realtime_update(payload)
    state: dict[str, Any] = session.as_dict()
    echoes = ("realtime_session_payload", "realtime_audio", *POLICIES)
    state["extra_body"] = {k: v for k, v in session.extra_body.items() if k not in echoes}
    return state


@pytest.mark.parametrize("updates", SEQUENCES)
def test_the_given_update_reads_as_the_updates_did(
    wheel_config: Wheel, wheel_turns: modules.ModuleType, updates: tuple[dict[str, Any], ...]
) -> None:
    """vLLM-Omni's ``apply_realtime_update`` has the same session after the one update
    a fresh upstream gets as after the updates the lost one got, one by one: a setting
    spelled several ways is replaced whole by a later update naming it any way, and a
    value it ignores (``extra_body: null``, ``audio: null``) leaves the earlier one."""
    sc = make()
    sent = updated(sc, *updates)
    assert read_by_wheel(wheel_config, wheel_turns, lost(sc)) == read_by_wheel(
        wheel_config, wheel_turns, *sent
    )


def test_a_later_flat_policy_replaces_one_given_in_extra_body(
    wheel_config: Wheel, wheel_turns: modules.ModuleType
) -> None:
    """``extra_body.overlap_policy`` then a flat one: the fresh upstream runs the flat
    one, as the lost one did (a stale ``extra_body`` copy would win over it)."""
    sc = make()
    updated(sc, {"extra_body": {"overlap_policy": BARGE_IN}}, {"overlap_policy": "listen_only"})
    session = lost(sc)
    assert read_by_wheel(wheel_config, wheel_turns, session)["overlap_policy"] == "listen_only"
    assert session.get("extra_body", {}).get("overlap_policy") in (None, "listen_only")


def fold(*updates: dict[str, Any]) -> dict[str, Any]:
    kept: dict[str, Any] | None = None
    for each in updates:
        kept = folded({"type": "session.update", "session": each}, kept)
    assert kept is not None
    session: dict[str, Any] = kept["session"]
    return session


def test_a_later_spelling_of_a_setting_replaces_the_earlier_one() -> None:
    assert fold({"voice": "alloy"}, {"audio": {"output": {"voice": "echo"}}}) == {
        "audio": {"output": {"voice": "echo"}}
    }
    assert fold(VOICE_ECHO, {"voice": None}) == {
        "voice": None,
        "audio": {"output": {"format": {"type": "audio/g711_ulaw"}}},
    }
    assert fold({"max_response_output_tokens": 100}, {"max_output_tokens": 200}) == {
        "max_output_tokens": 200
    }
    assert fold({"modalities": ["text", "audio"]}, {"output_modalities": ["text"]}) == {
        "output_modalities": ["text"]
    }


def test_a_null_vllm_omni_ignores_leaves_the_earlier_settings() -> None:
    extra = {"overlap_policy": "barge_in", "a": 1}
    assert fold({"extra_body": extra}, {"extra_body": None}) == {"extra_body": extra}
    assert fold(VOICE_ECHO, {"audio": None}) == VOICE_ECHO
    turn = {"audio": {"input": {"turn_detection": VAD}}}
    assert fold(turn, VOICE_ECHO, {"audio": {"output": None}}) == {
        "audio": {**turn["audio"], **VOICE_ECHO["audio"]}
    }
    assert fold({"temperature": 0.5}, {"temperature": None}) == {"temperature": 0.5}


def test_the_first_update_too_is_stated_as_vllm_omni_reads_it() -> None:
    """A replica opening a fresh upstream with it (``DuplexSessionConfig.from_realtime``
    reads ``max_response_output_tokens or max_output_tokens``) reads what the lost
    upstream did (``apply_realtime_update`` takes the first spelling named)."""
    first = {"max_response_output_tokens": None, "max_output_tokens": 200, "voice": 7}
    assert fold({**first, "extra_body": None}) == {"max_response_output_tokens": None}
