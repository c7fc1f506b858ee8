"""Reference backends: faithful stand-ins for vLLM-Omni 0.30.0's three behaviours.

* ``duplex`` -- a model-native duplex model with barge-in (MiniCPM-o 4.5 profile);
* ``duplex-no-barge-in`` -- model-native, hears overlap but cannot cut itself
  (Nemotron VoiceChat profile);
* ``turn`` -- a deployment without a duplex adapter: the turn-based dialect.

See ``server.build_reference_app`` and ``options.ReferenceOptions``; how closely they
follow the real server (``fidelity``, per-behaviour flags, model profiles) is listed in
``docs/fidelity.md``.
"""

from proxy.reference.options import FAULTS, KINDS, ReferenceOptions
from proxy.reference.server import (
    build_reference_app,
    run_reference_backend,
    running_reference_backend,
)

__all__ = [
    "FAULTS",
    "KINDS",
    "ReferenceOptions",
    "build_reference_app",
    "run_reference_backend",
    "running_reference_backend",
]
