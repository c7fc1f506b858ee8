"""The strict stand-ins per model profile, like vLLM-Omni 0.30.0 (``docs/fidelity.md``
rows 7, 10, 11): each profile's open requirements and preset, PersonaPlex's float
24 kHz input, and the model name left unchecked.

Each test runs a real reference backend over a real WebSocket; "nothing happened" is
shown with the sentinel ``Peer.settle`` (``tests/reference_strict_client.py``).
"""

from __future__ import annotations

import base64

import aiohttp
import numpy as np
import pytest

from proxy.reference import ReferenceOptions, running_reference_backend
from tests.reference_strict_client import backend, refusal, session
from tests.testaudio import vowel

pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize(
    ("profile", "missing", "present", "code"),
    [
        ("minicpmo", {}, {"ref_audio": "data:audio/wav;base64,AA=="}, "ref_audio_required"),
        (
            "nemotron",
            {},
            {"extra_body": {"auto_response": True}},
            "unsupported_nemotron_duplex_mode",
        ),
        ("nemotron", {}, {"extra_body": {"full_duplex": True}}, "unsupported_nemotron_duplex_mode"),
        (
            "qwen3omni",
            {"extra_body": {"auto_response": True}},
            {},
            "invalid_duplex_runtime_config",
        ),
    ],
)
async def test_profile_refuses_an_open_without_its_fields(
    profile: str, missing: dict[str, object], present: dict[str, object], code: str
) -> None:
    options = ReferenceOptions(fidelity="strict", profile=profile)
    async with backend(options) as (http, url):
        error = await refusal(http, url, model="m", **missing)
        assert error["code"] == code
        async with session(http, url, **present) as (_, created):
            assert created["session"]["id"]  # type: ignore[index]


async def test_generic_profile_has_no_open_requirements() -> None:
    async with backend() as (http, url), session(http, url) as (_, created):
        caps = created["session"]["capabilities"]  # type: ignore[index]
        assert caps["supports_barge_in"] is True


async def test_minicpmo_preset_timing() -> None:
    options = ReferenceOptions(fidelity="strict", profile="minicpmo")
    async with backend(options) as (http, url), session(http, url, ref_audio="x") as (_, c):
        caps = c["session"]["capabilities"]  # type: ignore[index]
        assert caps["chunk_period_ms"] == 1000
        assert caps["target_barge_in_latency_ms"] is None


async def test_personaplex_reads_float_24k_only_and_cannot_resume() -> None:
    options = ReferenceOptions(fidelity="strict", profile="personaplex")
    async with backend(options) as (http, url), session(http, url) as (p, created):
        caps = created["session"]["capabilities"]  # type: ignore[index]
        assert caps["supports_client_commit"] is False
        assert caps["supports_session_resume"] is False
        assert caps["chunk_period_ms"] == 80
        assert "resume_token" not in created and "attachment_generation" not in created
        await p.speak(vowel(100))  # PCM16 at 16 kHz: converted to 16 kHz float, refused
        error = await p.until("error")
        assert await p.settle() == []
        assert error["error"] == {
            "type": "invalid_request_error",
            "code": "bad_event",
            "message": "PersonaPlex sample_rate_hz must be 24000",
        }
        floats = (vowel(500, rate_hz=24000).astype(np.float32) / 32768.0).astype("<f4")
        await p.send(
            {
                "type": "input_audio_buffer.append",
                "audio": base64.b64encode(floats.tobytes()).decode(),
                "format": "pcm_f32le",
                "sample_rate_hz": 24000,
            }
        )
        seen = await p.settle()
        assert "error" not in seen and "input_audio_buffer.speech_started" in seen


async def test_model_name_is_not_checked_when_strict() -> None:
    strict = ReferenceOptions(fidelity="strict")
    async with running_reference_backend("duplex", served_model="real", options=strict) as base:
        url = base.replace("http://", "ws://") + "/v1/realtime?duplex=1&autostart=0"
        async with aiohttp.ClientSession() as http, session(http, url, model="other") as (_, c):
            assert c["session"]["model"] == "other"  # type: ignore[index]
