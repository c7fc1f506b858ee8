"""Overlap-add for the echo suppressor's STFT frames (``shim/echo.py``).

Frames are FRAME samples every HOP (half a frame), windowed twice (analysis and
synthesis) by ``WIN``, whose square sums to one over overlapping frames. Each HOP
of output is the second half of one frame plus the first half of the next; the
second half of the last frame waits (``ola``) for the next call.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from shim.echo_far import HOP, MAX_FRAMES, WIN

Float32Array = npt.NDArray[np.float32]
FloatArray = npt.NDArray[np.floating]

_WIN2 = WIN * WIN
_HEAD, _TAIL = _WIN2[:HOP], _WIN2[HOP:]
# The halves repeated for k frames end to end: a k-frame product is then one flat
# multiply, which costs a third of the same multiply broadcast over a (k, HOP) view.
_HEADS = [np.tile(_HEAD, k) for k in range(MAX_FRAMES + 1)]
_TAILS = [np.tile(_TAIL, k) for k in range(MAX_FRAMES + 1)]
# Zeros to add (an array: adding a scalar goes through numpy's slower scalar path).
_ZEROS = [np.zeros(k * HOP, dtype=np.float32) for k in range(MAX_FRAMES + 1)]


def overlap_add(y: FloatArray, ola: Float32Array) -> tuple[Float32Array, Float32Array]:
    """Frames ``y`` (k, FRAME) after ``ola``: k * HOP samples out, and the new ``ola``."""
    k = y.shape[0]
    acc = np.zeros((k + 1) * HOP, dtype=np.float32)
    acc[:HOP] = ola
    for i in range(k):
        acc[i * HOP : i * HOP + 2 * HOP] += y[i]
    return acc[: k * HOP], acc[k * HOP :]


def pass_through(x: Float32Array, k: int, ola: Float32Array) -> tuple[Float32Array, Float32Array]:
    """``overlap_add`` of the ``k`` frames of ``x`` unchanged (``x * WIN * WIN``), with
    no frame matrix: a HOP of output is the previous frame's ``x * tail`` plus the
    next one's ``x * head``. This runs for every microphone chunk while nothing plays,
    and gives the very same float32 values: the same products, and the same sums
    (``overlap_add`` adds each tail to a zeroed buffer first, hence the ``+ 0.0``,
    which turns a -0.0 into 0.0 as that does)."""
    if k > MAX_FRAMES:
        heads, tails_w = np.tile(_HEAD, k), np.tile(_TAIL, k)
        zeros: Float32Array = np.zeros(k * HOP, dtype=np.float32)
    else:
        heads, tails_w, zeros = _HEADS[k], _TAILS[k], _ZEROS[k]
    n = k * HOP
    out = x[:n] * heads  # the first half of each frame, frame after frame
    tails = x[HOP : n + HOP] * tails_w  # its second
    tails += zeros
    # In place, and float addition commutes: the same values as ``before + heads``.
    out[:HOP] += ola
    out[HOP:] += tails[:-HOP]
    return out, tails[-HOP:].copy()
