"""vLLM-Omni 0.30.0's own ``apply_realtime_update`` (``engine/duplex/config.py``), loaded
from the wheel, to read a relay's updates as vLLM-Omni does.

The ``wheel_config`` fixture needs ``wheel_session`` (tests/wheel_realtime_session.py),
and ``read_by_wheel`` the wheel's turn-detection module (``wheel_turns``,
tests/wheel_turn_detection.py): a test module imports all three and names them in
``__all__``.
"""

from __future__ import annotations

import ast
import copy
import sys
import types as modules
import zipfile
from typing import Any
from unittest import mock

import pytest

from tests.relay_kept_updates import POLICIES
from tests.vllm_omni_client import VERSION, WHEEL


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
