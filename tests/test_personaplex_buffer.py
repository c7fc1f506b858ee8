"""PersonaPlex takes its input in 80 ms units: the strict stand-in's buffer
(``proxy/reference/personaplex_frames.py``) against ``PersonaPlexPcmAppendBuffer``
itself, loaded from the vLLM-Omni 0.30.0 wheel
(``model_executor/models/personaplex/duplex/input.py``; it imports only numpy): the
same units out, the same refusals in the same words.
"""

from __future__ import annotations

import base64
import importlib.util
import random
import types
import zipfile

import numpy as np
import pytest

from proxy.reference.personaplex_frames import (
    UNIT_SAMPLES,
    PersonaPlexFrames,
    PersonaPlexInputError,
)
from tests.personaplex_standin import float_payload
from tests.vllm_omni_client import VERSION, WHEEL, fetch_client_sources

pytestmark = pytest.mark.timeout(120)


INPUT_PY = "vllm_omni/model_executor/models/personaplex/duplex/input.py"


@pytest.fixture(scope="module")
def wheel_buffer(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> types.ModuleType:
    """``personaplex/duplex/input.py`` from the 0.30.0 wheel, as a module of its own."""
    store = getattr(request.config, "cache", None)
    name = f"vllm-omni-{VERSION}"
    cache = store.mkdir(name) if store is not None else tmp_path_factory.mktemp(name)
    fetch_client_sources(cache)  # downloads and checks the wheel
    target = cache / "personaplex_input.py"
    with zipfile.ZipFile(cache / WHEEL) as archive:
        target.write_bytes(archive.read(INPUT_PY))
    spec = importlib.util.spec_from_file_location("wheel_personaplex_input", target)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _samples(payload: dict[str, object] | None) -> np.ndarray | None:
    if payload is None:
        return None
    return np.frombuffer(base64.b64decode(str(payload["audio"])), dtype="<f4")


def test_stand_in_buffer_does_what_the_wheels_does(wheel_buffer: types.ModuleType) -> None:
    rng = random.Random(11)
    real = wheel_buffer.PersonaPlexPcmAppendBuffer()
    ours = PersonaPlexFrames()
    for step in range(600):
        op = rng.random()
        if op < 0.8:
            n = rng.choice([0, 1, 480, 960, 1919, 1920, 1921, 2400, 4000, 5760])
            samples = np.asarray([rng.uniform(-1, 1) for _ in range(n)], dtype=np.float32)
            emit = rng.random() < 0.7
            reservation = real.prepare_append(
                float_payload(samples),
                operation_id=f"op{step}",
                chunk_period_ms=80,
                allow_emit=emit,
            )
            expected = None if reservation is None else _samples(reservation.payload)
            if reservation is not None:
                reservation.commit()
            raw = samples.astype("<f4").tobytes()
            got = ours.append("pcm_f32le", 24000, raw, allow_emit=emit)
        elif op < 0.95:
            reservation = real.prepare_commit(operation_id=f"op{step}", chunk_period_ms=80)
            expected = _samples(reservation.payload)
            reservation.commit()
            got = ours.commit()
        else:
            real.clear()
            ours.clear()
            expected = got = None
        assert (got is None) == (expected is None), step
        if got is not None:
            assert expected is not None
            assert got.size == UNIT_SAMPLES == expected.size
            np.testing.assert_array_equal(got, expected)
        assert ours.pending_samples * 4 == real.pending_byte_count, step


@pytest.mark.parametrize(
    ("fmt", "rate", "raw"),
    [
        ("pcm16", 24000, b"\0\0\0\0"),
        ("pcm_f32le", 16000, b"\0\0\0\0"),
        ("pcm_f32le", 24000, b"\0\0\0"),
        ("pcm_f32le", 24000, np.asarray([np.nan], dtype="<f4").tobytes()),
    ],
    ids=["format", "rate", "bytes", "nan"],
)
def test_stand_in_refuses_what_the_wheel_refuses_with_its_words(
    wheel_buffer: types.ModuleType, fmt: str, rate: int, raw: bytes
) -> None:
    payload = {
        "format": fmt,
        "sample_rate_hz": rate,
        "audio": base64.b64encode(raw).decode(),
    }
    with pytest.raises(ValueError) as real:
        wheel_buffer.PersonaPlexPcmAppendBuffer().prepare_append(
            payload, operation_id="x", chunk_period_ms=80, allow_emit=True
        )
    with pytest.raises(PersonaPlexInputError) as ours:
        PersonaPlexFrames().append(fmt, rate, raw, allow_emit=True)
    assert str(ours.value) == str(real.value)
