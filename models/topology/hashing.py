"""Deterministic 64-bit hashing of (seed, src, dst, key) for routing choices.

ECMP path selection, Valiant intermediate groups and tie-breaking among equal paths draw
from this hash, never from ``random`` or ``hash()``: the same topology seed and the same
(src, dst, key) give the same choice on every run, rank and platform. The scalar form (Python
ints) and the vectorized form (numpy uint64) give identical values; tests check it.
"""

from __future__ import annotations

import numpy as np

M64 = (1 << 64) - 1
_G = 0x9E3779B97F4A7C15
_C1 = 0xBF58476D1CE4E5B9
_C2 = 0x94D049BB133111EB


def mix64(x: int) -> int:
    """The splitmix64 finaliser of ``x`` (a Python int, taken mod 2**64)."""
    x = (x + _G) & M64
    x = ((x ^ (x >> 30)) * _C1) & M64
    x = ((x ^ (x >> 27)) * _C2) & M64
    return x ^ (x >> 31)


def salt_seed(seed: int, salt: int) -> int:
    """A per-purpose seed so that different routing decisions draw independent values."""
    return mix64((seed & M64) ^ mix64(salt))


def pair_hash(salted: int, src: int, dst: int, key: int) -> int:
    """Hash of one (src, dst, key) under a salted seed (see :func:`salt_seed`)."""
    h = mix64(salted ^ (((src & 0xFFFFFFFF) << 32) | (dst & 0xFFFFFFFF)))
    return mix64(h ^ (key & M64))


def mix64_np(x: np.ndarray) -> np.ndarray:
    """Vectorized :func:`mix64` over a uint64 array (wrapping arithmetic)."""
    with np.errstate(over="ignore"):
        x = np.asarray(x, dtype=np.uint64) + np.uint64(_G)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(_C1)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(_C2)
        return x ^ (x >> np.uint64(31))


def pair_hash_np(salted: int, src: np.ndarray, dst: np.ndarray, key: np.ndarray) -> np.ndarray:
    """Vectorized :func:`pair_hash`; returns uint64."""
    with np.errstate(over="ignore"):
        s = np.asarray(src).astype(np.int64).astype(np.uint64) & np.uint64(0xFFFFFFFF)
        d = np.asarray(dst).astype(np.int64).astype(np.uint64) & np.uint64(0xFFFFFFFF)
        k = np.asarray(key).astype(np.int64).astype(np.uint64)
        h = mix64_np((s << np.uint64(32) | d) ^ np.uint64(salted))
        return mix64_np(h ^ k)
