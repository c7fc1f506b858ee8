"""vLLM-Omni 0.30.0's own turn detection, for tests that read a session as vLLM-Omni does.

The module-scoped ``wheel_turns`` fixture loads ``engine/duplex/turn_detection.py`` (and
the ``vad.py`` it imports) from the wheel (tests/vllm_omni_client.py fetches and checks
it) as modules of their own names; a test module imports the fixture and names it in
``__all__``.
"""

from __future__ import annotations

import sys
import types
import zipfile
from collections.abc import Iterator

import pytest

from tests.vllm_omni_client import VERSION, WHEEL, fetch_client_sources


@pytest.fixture(scope="module")
def wheel_turns(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[types.ModuleType]:
    """``engine/duplex/turn_detection.py`` from the 0.30.0 wheel (with the ``vad.py`` it
    imports, its logger the standard library's), as modules of their own names."""
    store = getattr(request.config, "cache", None)
    name = f"vllm-omni-{VERSION}"
    cache = store.mkdir(name) if store is not None else tmp_path_factory.mktemp(name)
    fetch_client_sources(cache)  # downloads and checks the wheel
    prefix = "vllm_omni/engine/duplex/"
    with zipfile.ZipFile(cache / WHEEL) as archive:
        vad_src = archive.read(prefix + "vad.py").decode()
        turns_src = archive.read(prefix + "turn_detection.py").decode()
    names = ("wheel_duplex_vad", "wheel_duplex_turn_detection")
    vad_src = vad_src.replace(
        "from vllm.logger import init_logger", "from logging import getLogger as init_logger"
    )
    turns_src = turns_src.replace("vllm_omni.engine.duplex.vad", names[0])
    modules = []
    for module_name, source, path in zip(
        names, (vad_src, turns_src), ("vad.py", "turn_detection.py"), strict=True
    ):
        module = types.ModuleType(module_name)
        sys.modules[module_name] = module
        exec(compile(source, prefix + path, "exec"), module.__dict__)
        modules.append(module)
    try:
        yield modules[1]
    finally:
        for module_name in names:
            sys.modules.pop(module_name, None)
