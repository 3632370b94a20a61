"""Space-filling curves over integer grids: the locality keys node orderings and rank
mappings sort by."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["hilbert_index"]


def hilbert_index(coords: Any, bits: int) -> np.ndarray:
    """Hilbert curve index of integer points ``coords`` (shape ``(n, D)``, each coordinate in
    ``[0, 2**bits)``), by Skilling's transpose algorithm (AIP Conf. Proc. 707, 2004).

    Consecutive indices are points at Manhattan distance 1.
    """
    X = np.array(coords, dtype=np.int64, copy=True)
    if X.ndim != 2:
        raise ValueError("coords must have shape (n, D)")
    n, D = X.shape
    if D == 0 or n == 0:
        return np.zeros(n, dtype=np.int64)
    X = X.T.copy()
    M = 1 << (bits - 1)
    # Inverse undo: Gray-code rotations and reflections, most significant bit first.
    Q = M
    while Q > 1:
        P = Q - 1
        for i in range(D):
            hit = (X[i] & Q) != 0
            t = np.where(hit, 0, (X[0] ^ X[i]) & P)
            X[0] = np.where(hit, X[0] ^ P, X[0] ^ t)
            if i:
                X[i] = X[i] ^ t
        Q >>= 1
    # Gray encode.
    for i in range(1, D):
        X[i] ^= X[i - 1]
    t = np.zeros(n, dtype=np.int64)
    Q = M
    while Q > 1:
        t = np.where((X[D - 1] & Q) != 0, t ^ (Q - 1), t)
        Q >>= 1
    for i in range(D):
        X[i] ^= t
    # Interleave the transposed bits: bit b of X[0] is the most significant of its group.
    h = np.zeros(n, dtype=np.int64)
    for b in range(bits - 1, -1, -1):
        for i in range(D):
            h = (h << 1) | ((X[i] >> b) & 1)
    return h
