"""How a stand-in is made strict: ``ReferenceOptions`` (the default is strict, each flag
overrides the preset), the command-line switches that build it and reach a running
backend, and the embedded backends (``proxy/embedded.py``), strict and holding the
replica's sessions.
"""

from __future__ import annotations

import argparse

import aiohttp
import pytest

from proxy.app import STATE, build_app
from proxy.config import config_from_dict
from proxy.reference import ReferenceOptions
from proxy.reference.cli import add_reference_arguments, options_from_args
from proxy.reference.options import STRICT_FLAGS
from tests.proxy_process import cli_backend
from tests.reference_strict_client import SPEECH, refusal, session
from tests.servers import serve_app

pytestmark = pytest.mark.timeout(60)


async def test_cli_strict_profile_reaches_the_backend() -> None:
    options = ("--strict", "--profile", "nemotron", "--max-sessions", "2")
    async with cli_backend("duplex", *options) as backend, aiohttp.ClientSession() as http:
        url = f"ws://127.0.0.1:{backend.port}/v1/realtime?duplex=1&autostart=0"
        error = await refusal(http, url, model="m")
        assert error["code"] == "unsupported_nemotron_duplex_mode"
        auto = {"extra_body": {"auto_response": True}}
        async with session(http, url, **auto) as (_, c):
            caps = c["session"]["capabilities"]  # type: ignore[index]
            assert caps["supports_multi_session"] is True and caps["chunk_period_ms"] == 80
    assert backend.returncode == 0


def test_default_is_strict_and_each_flag_overrides_the_preset() -> None:
    lenient, strict = ReferenceOptions(fidelity="lenient"), ReferenceOptions()
    for flag in STRICT_FLAGS:
        assert lenient.strict(flag) is False and strict.strict(flag) is True
        assert ReferenceOptions(**{flag: False}).strict(flag) is False
        assert ReferenceOptions(fidelity="lenient", **{flag: True}).strict(flag) is True
    assert lenient.session_limit is None and strict.session_limit == 1
    for bad in ({"fidelity": "exact"}, {"profile": "gpt"}, {"max_sessions": 0}, {"warmup_s": -1}):
        with pytest.raises(ValueError):
            ReferenceOptions(**bad)  # type: ignore[arg-type]


def test_cli_arguments_build_the_options() -> None:
    parser = argparse.ArgumentParser()
    add_reference_arguments(parser)
    assert options_from_args(parser.parse_args([])) == ReferenceOptions(fidelity="strict")
    assert options_from_args(parser.parse_args(["--lenient"])) == ReferenceOptions(
        fidelity="lenient"
    )
    args = ["--strict", "--max-sessions", "3", "--profile", "qwen3omni", "--warmup-s", "2.5"]
    assert options_from_args(parser.parse_args(args)) == ReferenceOptions(
        fidelity="strict", max_sessions=3, profile="qwen3omni", warmup_s=2.5
    )
    with pytest.raises(SystemExit):
        parser.parse_args(["--strict", "--lenient"])


async def test_embedded_backend_is_strict_and_holds_the_replicas_sessions() -> None:
    config = config_from_dict(
        {"server": {"max_sessions": 3}, "routes": [{"model": "m", "upstream": "embedded://duplex"}]}
    )
    app = build_app(config)
    async with serve_app(app), aiohttp.ClientSession() as http:
        url = app[STATE].embedded_urls["duplex"] + "?duplex=1&autostart=0"
        async with (
            session(http, url) as (p, created),
            session(http, url),
            session(http, url),
        ):
            opened = created["session"]
            assert isinstance(opened, dict)
            assert opened["capabilities"]["supports_multi_session"] is True
            # Strict: no server VAD, so speech is no turn and a bare commit is not answered.
            await p.speak(SPEECH)
            await p.send({"type": "input_audio_buffer.commit"})
            seen = await p.settle()
            assert "input_audio_buffer.committed" in seen and "response.created" not in seen
            error = await refusal(http, url)
            assert error["code"] == "resource_exhausted", "[server] max_sessions is its limit"
